"""Heavy hitters: the most frequent strings of a task, found without a candidate list.

Answered from the same stored sums as estimates (one read of every slice, one snapshot,
rows streamed) under the same min_batch_size rule; the view is
ldp_telemetry.aggregator.api.heavy_hitters. It does not know mechanisms: it asks the
task's mechanism for ``discover``; one that cannot discover answers 422
``not_discoverable``.
"""

from __future__ import annotations

from typing import Any

from ldp_telemetry.aggregator.core.analysis import slices as breakdowns
from ldp_telemetry.aggregator.core.analysis.central import Shuffle, central_fields
from ldp_telemetry.aggregator.core.analysis.estimates import check_min_batch
from ldp_telemetry.aggregator.core.analysis.query import (
    BREAKDOWN,
    Breakdown,
    Window,
    invalid,
    parse_breakdown,
    parse_window,
)
from ldp_telemetry.aggregator.core.problems import ApiError
from ldp_telemetry.aggregator.store import SumsSource, SumsView
from ldp_telemetry.shared import ParameterError, TaskConfig
from ldp_telemetry.shared.answers import HeavyHitterAnswer, HeavyHitterSlice
from ldp_telemetry.shared.contract import NOT_DISCOVERABLE
from ldp_telemetry.shared.mechanisms.base import Discovering
from ldp_telemetry.shared.mechanisms.features import discoverer

FIELDS = {"top", "start", "end", "level", "survivors", *BREAKDOWN}
MAX_TOP, MAX_SURVIVORS = 1000, 4096


def parse_request(task: TaskConfig, body: Any) -> tuple[int, int, Window, Breakdown | None]:
    """Return a heavy-hitters request's ``top``, ``survivors``, window and breakdown, or
    raise 400."""
    if not isinstance(body, dict) or set(body) - FIELDS:
        invalid(f"the body must be a JSON object with fields among {sorted(FIELDS)}")
    top, survivors = _count(body, "top", 20, MAX_TOP), _count(body, "survivors", 64, MAX_SURVIVORS)
    return top, survivors, parse_window(body), parse_breakdown(task, body)


def answer(
    task: TaskConfig,
    top: int,
    survivors: int,
    window: Window,
    source: SumsSource,
    breakdown: Breakdown | None = None,
) -> HeavyHitterAnswer:
    """Return the heavy-hitters body (the view and the CLI), or raise a problem.

    ``source``: where the sums come from (the store, or a sums file the CLI reads);
    ``breakdown`` (group_by, where) adds one ``slices`` block per row, each searched
    among its own slices' reports.
    """
    found_by = discoverer(task.mechanism_object)
    if found_by is None:
        raise ApiError(
            422,
            NOT_DISCOVERABLE,
            f"task {task.task_id!r} ({task.mechanism}) cannot list its frequent "
            "values without candidates: use the estimates endpoint",
        )
    with source.read_slices(task, window.start, window.end) as sliced:  # one read for all rows
        found = _discover(found_by, task, top, survivors, window, sliced.sums())
        shuffle = Shuffle(task, source, window, found.estimates.n, sliced.counts)
        body: HeavyHitterAnswer = {
            "task_id": task.task_id,
            "mechanism": task.mechanism,
            "n": found.estimates.n,
            "epsilon": task.asked_epsilon,
            "effective_epsilon": task.effective_epsilon,
            **central_fields(shuffle, found.estimates.n),  # as estimates answer
            "level": window.level,
            "start": window.start,
            "end": window.end,
            "levels": found.levels,
            "examined": list(found.examined),
            "reliable_z": found.reliable_z,
            "heavy_hitters": found.rows(),
        }
        if breakdown is not None:
            plan = breakdowns.plan(task, breakdown, sliced.counts)
            body["breakdown"] = plan.summary
            body["slices"] = []
            for row in plan.rows:
                sums = sliced.sums(row.slices)
                found = _discover(found_by, task, top, survivors, window, sums)
                block: HeavyHitterSlice = {
                    "dimensions": row.dimensions,
                    "n": found.estimates.n,
                    **central_fields(shuffle, found.estimates.n, row.slices),
                    "levels": found.levels,
                    "examined": list(found.examined),
                    "reliable_z": found.reliable_z,
                    "heavy_hitters": found.rows(),
                    "rolled_up": row.rolled_up,
                }
                body["slices"].append(block)
    return body


def _discover(
    found_by: Discovering,
    task: TaskConfig,
    top: int,
    survivors: int,
    window: Window,
    sums: SumsView,
) -> Any:
    """Return what the search finds among the reports of ``sums`` (the totals, or a row's)."""
    check_min_batch(task, sums, "heavy hitters")
    try:
        return found_by.discover(sums, top=top, survivors=max(top, survivors), level=window.level)
    except ParameterError as error:
        invalid(str(error))


def _count(body: dict[str, Any], name: str, default: int, limit: int) -> int:
    value = body.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
        invalid(f"{name} must be an integer in [1, {limit}]")
    return value
