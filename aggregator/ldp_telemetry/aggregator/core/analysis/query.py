"""Parse and check the bodies of analyst queries (estimates, heavy hitters)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, NoReturn

from ldp_telemetry.aggregator.core.problems import ApiError
from ldp_telemetry.shared import ParameterError, TaskConfig
from ldp_telemetry.shared.contract import INVALID_QUERY, QUERY_TOO_LARGE
from ldp_telemetry.shared.estimates import DEFAULT_LEVEL

BREAKDOWN = ("group_by", "where")  # the fields of a breakdown, in every analyst query

FIELDS = {"candidates", "start", "end", "level", "fake_fraction", "normalize", *BREAKDOWN}


@dataclass(frozen=True)
class Window:
    """Buckets starting in [start, end) (None: unbounded) and a confidence level."""

    start: int | None = None
    end: int | None = None
    level: float = DEFAULT_LEVEL

    def holds(self, bucket: int) -> bool:
        """Return whether a bucket starting at ``bucket`` is in the window."""
        return (self.start is None or bucket >= self.start) and (
            self.end is None or bucket < self.end
        )


@dataclass(frozen=True)
class Breakdown:
    """A query's ``group_by`` (declared names, in the analyst's order) and ``where``
    (declared name → value), checked against the task's dimensions."""

    group_by: tuple[str, ...] = ()
    where: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class EstimateQuery:
    """Candidates (None: the mechanism's default), a [start, end) range and a level."""

    candidates: list[str] | None
    start: int | None
    end: int | None
    level: float
    fake_fraction: float | None = None
    normalize: bool = False
    breakdown: Breakdown | None = None

    @property
    def window(self) -> Window:
        """Return the range and level alone."""
        return Window(self.start, self.end, self.level)


def parse_window(body: dict[str, Any]) -> Window:
    """Return the ``start``, ``end`` and ``level`` of a query body, or raise a 400 problem."""
    start, end = _time(body, "start"), _time(body, "end")
    if start is not None and end is not None and start >= end:
        invalid(f"start ({start}) must be before end ({end})")
    level = body.get("level", DEFAULT_LEVEL)
    if (
        isinstance(level, bool)
        or not isinstance(level, int | float)
        or not math.isfinite(level)
        or not 0 < level < 1
    ):
        invalid("level must be a number in (0, 1), e.g. 0.95")
    return Window(start, end, float(level))


def check_cost(task: TaskConfig, candidates: list[Any] | None, max_work: int) -> None:
    """Refuse (422 ``query_too_large``) a query whose candidates × sketch rows pass max_work.

    An estimate hashes every candidate into every row it reads: that product is its cost
    (the table's own size is bounded by the task). Checked before any work is done.
    """
    rows = task.mechanism_object.sums_shape[0]
    count = len(candidates) if candidates is not None else 0
    if count * rows > max_work:
        raise ApiError(
            422,
            QUERY_TOO_LARGE,
            f"{count} candidates × {rows} rows = {count * rows:,} hash lookups, "
            f"above this collector's limit of {max_work:,} (MAX_ESTIMATE_WORK): "
            f"send at most {max(1, max_work // rows):,} candidates per request",
            limit=max_work,
        )


def check_scan(task: TaskConfig, buckets: int, max_cells: int) -> None:
    """Refuse (422 ``query_too_large``) an estimate whose table read passes max_cells.

    An estimate reads every row of the table once per stored bucket of its window:
    k · m · buckets counters (a 2^20 × 2^16 sketch is 2^36 of them, a minute of work
    even empty). Checked once the window's buckets are known, before any row is read.
    """
    rows, width = task.mechanism_object.sums_shape
    cells = rows * width * max(1, buckets)
    if cells > max_cells:
        raise ApiError(
            422,
            QUERY_TOO_LARGE,
            f"{max(1, buckets)} bucket(s) of {rows:,} × {width:,} counters = {cells:,} to read, "
            f"above this collector's limit of {max_cells:,} (MAX_ESTIMATE_CELLS): "
            "narrow the range (start, end)",
            limit=max_cells,
        )


def parse_query(task: TaskConfig, body: Any, max_candidates: int) -> EstimateQuery:
    """Return the query a JSON body asks for, or raise a 400 problem naming the fix."""
    if not isinstance(body, dict):
        invalid('the body must be a JSON object {"candidates": [...], "start", "end", "level"}')
    unknown = set(body) - FIELDS
    if unknown:
        invalid(f"unknown fields {sorted(unknown)}; allowed: {sorted(FIELDS)}")
    window = parse_window(body)
    candidates = parse_candidates(task, body.get("candidates"), max_candidates)
    fakes = parse_fake_fraction(task, body.get("fake_fraction"))
    normalize = parse_normalize(task, body.get("normalize", False), candidates)
    breakdown = parse_breakdown(task, body)
    return EstimateQuery(
        candidates, window.start, window.end, window.level, fakes, normalize, breakdown
    )


def parse_breakdown(task: TaskConfig, body: dict[str, Any]) -> Breakdown | None:
    """Return the ``group_by`` and ``where`` a query body asks for (None: neither), or
    raise a 400 problem naming the fix."""
    if not any(name in body for name in BREAKDOWN):
        return None
    if task.dimensions is None:
        invalid(
            f"task {task.task_id!r} declares no dimensions: group_by and where need a task "
            "created with dimensions"
        )
    group_by, where = body.get("group_by", []), body.get("where", {})
    if not isinstance(group_by, list) or not all(isinstance(name, str) for name in group_by):
        invalid(f'group_by must be a list of dimension names, e.g. ["{task.dimensions.names[0]}"]')
    if not isinstance(where, dict) or not all(isinstance(v, str) for v in where.values()):
        invalid('where must be an object of dimension names to values, e.g. {"platform": "ios"}')
    both = [name for name in group_by if name in where]
    if both:
        invalid(f"{both} fixed by where cannot also be grouped by: drop it from one of them")
    try:  # the names and values are checked where the task's dimensions are
        task.dimensions.grouped(group_by, where)
    except ParameterError as error:
        invalid(str(error))
    return Breakdown(tuple(group_by), dict(where))


def parse_normalize(task: TaskConfig, raw: Any, candidates: list[Any] | None) -> bool:
    """Return whether Norm-Sub is asked, or raise 400 where it cannot apply."""
    if not isinstance(raw, bool):
        invalid("normalize must be true or false")
    if raw and (candidates is not None or task.mechanism_object.reach() is None):
        invalid(
            "normalize projects a whole domain's counts: leave candidates out, on a task "
            "that knows its domain and estimates counts"
        )
    return raw


def parse_fake_fraction(task: TaskConfig, raw: Any) -> float | None:
    """Return the analyst's assumed share of fake reports (None: not asked), or raise 400."""
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not 0 <= raw < 1:
        invalid("fake_fraction must be a number in [0, 1), e.g. 0.01 for 1% fake reports")
    if task.mechanism_object.reach() is None:
        invalid(f"fake_fraction bounds counts; {task.mechanism} estimates are not counts")
    return float(raw)


def parse_candidates(task: TaskConfig, raw: Any, limit: int) -> list[Any] | None:
    """Return the candidates a query names (None: the mechanism's default) or raise 400."""
    # The size limit first: a huge list is refused before the mechanism looks at it.
    if isinstance(raw, list) and len(raw) > limit:
        invalid(f"at most {limit} candidates per request, got {len(raw)}; split the list")
    try:  # the mechanism's candidate policy (required, default, domain)
        return task.mechanism_object.parse_candidates(raw)
    except ParameterError as error:
        invalid(str(error))


def _time(body: dict[str, Any], name: str) -> int | None:
    value = body.get(name)
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**62
    ):
        invalid(f"{name} must be Unix seconds (an integer >= 0) or left out")
    return value


def invalid(detail: str) -> NoReturn:
    """Raise the 400 ``invalid_query`` problem."""
    raise ApiError(400, INVALID_QUERY, detail)
