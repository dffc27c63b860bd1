"""Heavy hitters: the most frequent strings of a task, found without a candidate list.

Answered from the same stored sums as estimates (one snapshot, rows streamed) under the
same min_batch_size rule. The endpoint does not know mechanisms: it asks the task's
mechanism for ``discover``; one that cannot discover answers 422 ``not_discoverable``.
"""

from __future__ import annotations

import math
from typing import Any, NoReturn

from flask import Blueprint

from aggregator.auth import require_role
from aggregator.body import json_body
from aggregator.problems import ApiError
from aggregator.store import get_store
from aggregator.tasks import find_task
from shared import ParameterError
from shared.estimates import DEFAULT_LEVEL

bp = Blueprint("heavy_hitters", __name__, url_prefix="/v1/tasks")
FIELDS = {"top", "start", "end", "level", "survivors"}
MAX_TOP, MAX_SURVIVORS = 1000, 4096


@bp.post("/<task_id>/heavy-hitters")
@require_role("analyst")
def heavy_hitters(task_id: str) -> dict[str, Any]:
    """Return the ``top`` strings over the buckets starting in [start, end)."""
    task = find_task(task_id).config
    mechanism = task.mechanism_object
    discover = getattr(mechanism, "discover", None)
    if discover is None:
        raise ApiError(422, "not_discoverable",
                       f"task {task_id!r} ({task.mechanism}) cannot list its frequent values "
                       "without candidates: use the estimates endpoint")
    body = json_body()
    if not isinstance(body, dict) or set(body) - FIELDS:
        _invalid(f"the body must be a JSON object with fields among {sorted(FIELDS)}")
    top, survivors = _count(body, "top", 20, MAX_TOP), _count(body, "survivors", 64,
                                                              MAX_SURVIVORS)
    start, end = _time(body, "start"), _time(body, "end")
    if start is not None and end is not None and start >= end:
        _invalid(f"start ({start}) must be before end ({end})")
    level = body.get("level", DEFAULT_LEVEL)
    if (isinstance(level, bool) or not isinstance(level, int | float)
            or not math.isfinite(level) or not 0 < level < 1):
        _invalid("level must be a number in (0, 1), e.g. 0.95")
    with get_store().read_sums(task, start, end) as sums:
        if sums.total < task.min_batch_size:
            raise ApiError(422, "below_min_batch_size",
                           f"only {sums.total} reports in this range; heavy hitters need at "
                           f"least {task.min_batch_size}: widen the range or wait",
                           n=sums.total, min_batch_size=task.min_batch_size)
        try:
            found = discover(sums, top=top, survivors=max(top, survivors), level=float(level))
        except ParameterError as error:
            _invalid(str(error))
    return {"task_id": task_id, "mechanism": task.mechanism, "n": found.estimates.n,
            "epsilon": task.asked_epsilon, "effective_epsilon": task.effective_epsilon,
            "level": float(level), "start": start, "end": end, "levels": found.levels,
            "examined": list(found.examined), "reliable_z": found.reliable_z,
            "heavy_hitters": found.rows()}


def _count(body: dict[str, Any], name: str, default: int, limit: int) -> int:
    value = body.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
        _invalid(f"{name} must be an integer in [1, {limit}]")
    return value


def _time(body: dict[str, Any], name: str) -> int | None:
    value = body.get(name)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                              or not 0 <= value < 2**62):
        _invalid(f"{name} must be Unix seconds (an integer >= 0) or left out")
    return value


def _invalid(detail: str) -> NoReturn:
    raise ApiError(400, "invalid_query", detail)
