"""Heavy hitters: the most frequent strings of a task, found without a candidate list.

Answered from the same stored sums as estimates (one snapshot, rows streamed) under the
same min_batch_size rule. The endpoint does not know mechanisms: it asks the task's
mechanism for ``discover``; one that cannot discover answers 422 ``not_discoverable``.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from aggregator.api.estimates import check_min_batch
from aggregator.api.tasks import find_task
from aggregator.core.auth import require_role
from aggregator.core.body import json_body
from aggregator.core.problems import ApiError
from aggregator.core.query import Window, invalid, parse_window
from aggregator.store import SumsSource, get_store
from shared import ParameterError, TaskConfig

bp = Blueprint("heavy_hitters", __name__, url_prefix="/v1/tasks")
FIELDS = {"top", "start", "end", "level", "survivors"}
MAX_TOP, MAX_SURVIVORS = 1000, 4096


@bp.post("/<task_id>/heavy-hitters")
@require_role("analyst")
def heavy_hitters(task_id: str) -> dict[str, Any]:
    """Return the ``top`` strings over the buckets starting in [start, end)."""
    task = find_task(task_id).config
    body = json_body()
    if not isinstance(body, dict) or set(body) - FIELDS:
        invalid(f"the body must be a JSON object with fields among {sorted(FIELDS)}")
    top, survivors = _count(body, "top", 20, MAX_TOP), _count(body, "survivors", 64, MAX_SURVIVORS)
    return answer(task, top, survivors, parse_window(body))


def answer(
    task: TaskConfig, top: int, survivors: int, window: Window, source: SumsSource | None = None
) -> dict[str, Any]:
    """Return the heavy-hitters body (the view and the CLI), or raise a problem.

    ``source``: where the sums come from (default: the store; the CLI may give a sums file).
    """
    discover = getattr(task.mechanism_object, "discover", None)
    if discover is None:
        raise ApiError(
            422,
            "not_discoverable",
            f"task {task.task_id!r} ({task.mechanism}) cannot list its frequent "
            "values without candidates: use the estimates endpoint",
        )
    with (source or get_store()).read_sums(task, window.start, window.end) as sums:
        check_min_batch(task, sums, "heavy hitters")
        try:
            found = discover(sums, top=top, survivors=max(top, survivors), level=window.level)
        except ParameterError as error:
            invalid(str(error))
    return {
        "task_id": task.task_id,
        "mechanism": task.mechanism,
        "n": found.estimates.n,
        "epsilon": task.asked_epsilon,
        "effective_epsilon": task.effective_epsilon,
        "level": window.level,
        "start": window.start,
        "end": window.end,
        "levels": found.levels,
        "examined": list(found.examined),
        "reliable_z": found.reliable_z,
        "heavy_hitters": found.rows(),
    }


def _count(body: dict[str, Any], name: str, default: int, limit: int) -> int:
    value = body.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
        invalid(f"{name} must be an integer in [1, {limit}]")
    return value
