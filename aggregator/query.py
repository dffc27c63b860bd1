"""Parse and check the body of an estimates request."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NoReturn

from aggregator.problems import ApiError
from shared import ParameterError, TaskConfig
from shared.estimates import DEFAULT_LEVEL

FIELDS = {"candidates", "start", "end", "level"}


@dataclass(frozen=True)
class EstimateQuery:
    """Candidates (None: the mechanism's default), a [start, end) range and a level."""

    candidates: list[str] | None
    start: int | None
    end: int | None
    level: float


def parse_query(task: TaskConfig, body: Any, max_candidates: int) -> EstimateQuery:
    """Return the query a JSON body asks for, or raise a 400 problem naming the fix."""
    if not isinstance(body, dict):
        _invalid('the body must be a JSON object {"candidates": [...], "start", "end", "level"}')
    unknown = set(body) - FIELDS
    if unknown:
        _invalid(f"unknown fields {sorted(unknown)}; allowed: {sorted(FIELDS)}")
    start, end = _time(body, "start"), _time(body, "end")
    if start is not None and end is not None and start >= end:
        _invalid(f"start ({start}) must be before end ({end})")
    level = body.get("level", DEFAULT_LEVEL)
    if (isinstance(level, bool) or not isinstance(level, int | float)
            or not math.isfinite(level) or not 0 < level < 1):
        _invalid("level must be a number in (0, 1), e.g. 0.95")
    candidates = _candidates(task, body.get("candidates"), max_candidates)
    return EstimateQuery(candidates, start, end, float(level))


def _candidates(task: TaskConfig, raw: Any, limit: int) -> list[Any] | None:
    # The size limit first: a huge list is refused before the mechanism looks at it.
    if isinstance(raw, list) and len(raw) > limit:
        _invalid(f"at most {limit} candidates per request, got {len(raw)}; split the list")
    try:  # the mechanism's candidate policy (required, default, domain)
        return task.mechanism_object.parse_candidates(raw)
    except ParameterError as error:
        _invalid(str(error))


def _time(body: dict[str, Any], name: str) -> int | None:
    value = body.get(name)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                              or not 0 <= value < 2**62):
        _invalid(f"{name} must be Unix seconds (an integer >= 0) or left out")
    return value


def _invalid(detail: str) -> NoReturn:
    raise ApiError(400, "invalid_query", detail)
