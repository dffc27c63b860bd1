"""Compare: two slices, or two time ranges, value by value, as tests.

Each side is a ``where`` (the slices it reads; none: every slice) over a time range; each
is estimated exactly as an estimates answer's totals or rows are
(:func:`~ldp_telemetry.aggregator.core.analysis.estimates.measure`), then compared by
:func:`ldp_telemetry.shared.breakdowns.comparison.compare_values`: per value the difference,
its standard error, an interval at ``level``, a two-sided p-value, and whether it stays
significant after Holm's step-down at α = 1 − level over the values compared. Counts are
compared as shares of each side's n (sides of different sizes); a numeric task's
statistics (mean, percentiles) as they are. The two sides must not share reports, and a
side of a task with dimensions must hold at least min_slice_size of them: a thin slice is
never shown alone, not even as a difference.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ldp_telemetry.aggregator.core.analysis.estimates import Asked, measure
from ldp_telemetry.aggregator.core.analysis.query import (
    invalid,
    parse_breakdown,
    parse_candidates,
    parse_window,
)
from ldp_telemetry.aggregator.core.problems import ApiError
from ldp_telemetry.aggregator.store import SumsSource
from ldp_telemetry.shared import TaskConfig
from ldp_telemetry.shared.answers import CompareAnswer, CompareSide, DifferenceRow
from ldp_telemetry.shared.breakdowns.comparison import Covariance, Side, compare_values
from ldp_telemetry.shared.contract import BELOW_MIN_BATCH_SIZE
from ldp_telemetry.shared.mechanisms.features import longitudinal

FIELDS = {"candidates", "start", "end", "level", "a", "b"}
SIDE_FIELDS = {"where", "start", "end"}


@dataclass(frozen=True)
class Population:
    """One side: its ``where``, time range and the slices it reads (None: every slice)."""

    where: dict[str, str]
    start: int | None
    end: int | None
    slices: frozenset[int] | None


@dataclass(frozen=True)
class CompareQuery:
    """Candidates (None: the mechanism's default), a confidence level, and two sides."""

    candidates: list[Any] | None
    level: float
    a: Population
    b: Population


def parse_compare(task: TaskConfig, body: Any, max_candidates: int) -> CompareQuery:
    """Return the comparison a JSON body asks for, or raise a 400 problem naming the fix."""
    if not isinstance(body, dict) or set(body) - FIELDS or not {"a", "b"} <= set(body):
        invalid(
            'the body must be a JSON object {"a": {"where": ..., "start": ..., "end": ...}, '
            f'"b": {{...}}}} with other fields among {sorted(FIELDS - {"a", "b"})}'
        )
    shared = parse_window(body)  # the level, and a range both sides read unless they say
    candidates = parse_candidates(task, body.get("candidates"), max_candidates)
    a, b = (_side(task, name, body[name], shared.start, shared.end) for name in ("a", "b"))
    if _overlap(a, b):
        invalid(
            "a and b share reports (the same slices over overlapping ranges): compare "
            "two slices, or two ranges that do not overlap"
        )
    return CompareQuery(candidates, shared.level, a, b)


def _side(task: TaskConfig, name: str, raw: Any, start: int | None, end: int | None) -> Population:
    """Return one side of a comparison, or raise 400."""
    if not isinstance(raw, dict) or set(raw) - SIDE_FIELDS:
        invalid(f"{name} must be a JSON object with fields among {sorted(SIDE_FIELDS)}")
    window = parse_window({"start": raw.get("start", start), "end": raw.get("end", end)})
    breakdown = parse_breakdown(task, {"where": raw["where"]}) if "where" in raw else None
    where = {} if breakdown is None else breakdown.where
    slices = None
    if task.dimensions is not None and where:
        slices = frozenset(task.dimensions.matching(where))
    return Population(where, window.start, window.end, slices)


def _overlap(a: Population, b: Population) -> bool:
    """Return whether two sides may hold the same reports."""
    low = max(-1 if a.start is None else a.start, -1 if b.start is None else b.start)
    high = min(
        2**63 if a.end is None else a.end, 2**63 if b.end is None else b.end
    )  # ranges [start, end) share a bucket start iff max(starts) < min(ends)
    shared_slices = a.slices is None or b.slices is None or bool(a.slices & b.slices)
    return low < high and shared_slices


def answer(
    task: TaskConfig, query: CompareQuery, source: SumsSource, *, max_cells: int | None = None
) -> CompareAnswer:
    """Return the comparison of the query's two sides (the view and the CLI)."""
    layer = longitudinal(task.mechanism_object)
    shares = task.mechanism_object.reach() is not None  # the estimates are counts
    measured, sides = [], []
    for population in (query.a, query.b):
        window = parse_window(
            {"start": population.start, "end": population.end, "level": query.level}
        )
        buckets = 1
        if layer is not None:
            buckets = sum(1 for bucket in source.buckets(task) if window.holds(bucket))
        with source.read_slices(task, population.start, population.end) as sliced:
            _check_slice_size(task, population, sliced.counts)
            sums = sliced.sums(population.slices)
            result = measure(task, query.candidates, window, sums, Asked(max_cells), buckets, 0)
        scale = 1.0 / result.n if shares else 1.0
        measured.append(
            [
                Side(
                    row["estimate"] * scale,
                    row["std_error"] * scale,
                    row.get("reason") if row.get("reliable") is False else None,
                )
                for row in result.rows
            ]
        )
        values = [row["value"] for row in result.rows]
        sides.append(_shown(population, result.n))
    alpha = 1.0 - query.level
    compared = compare_values(values, measured[0], measured[1], level=query.level, alpha=alpha)
    rows: list[DifferenceRow] = []
    for item, a, b in zip(compared, measured[0], measured[1], strict=True):
        d = item.difference
        row: DifferenceRow = {
            "value": item.value,
            "a": a.estimate,
            "b": b.estimate,
            "difference": d.difference,
            "std_error": d.std_error,
            "ci_low": d.ci_low,
            "ci_high": d.ci_high,
            "p_value": d.p_value,
            "adjusted_p": item.adjusted_p,
            "significant": item.significant,
        }
        if item.untested is not None:
            row["reason"] = item.untested
        rows.append(row)
    covariance = Covariance.NON_NEGATIVE if layer is not None else Covariance.INDEPENDENT
    return {
        "task_id": task.task_id,
        "mechanism": task.mechanism,
        "level": query.level,
        "alpha": alpha,
        "quantity": "share" if shares else "value",
        "covariance": covariance.explanation,
        "a": sides[0],
        "b": sides[1],
        "differences": rows,
    }


def _check_slice_size(task: TaskConfig, population: Population, held: Mapping[int, int]) -> None:
    """Refuse (422) a side of slices holding fewer than the task's min_slice_size reports
    (``held``: the reports per slice in the side's range)."""
    if population.slices is None or task.min_slice_size is None:
        return  # every slice: the task's totals, answered from min_batch_size on
    n = sum(count for index, count in held.items() if index in population.slices)
    if n < task.min_slice_size:
        raise ApiError(
            422,
            BELOW_MIN_BATCH_SIZE,
            f"where {population.where} holds {n} reports in its range, fewer than the "
            f"task's min_slice_size ({task.min_slice_size}): a thin slice is never shown "
            "alone, not even as a difference; widen where or the range",
            n=n,
            min_batch_size=task.min_slice_size,
        )


def _shown(population: Population, n: int) -> CompareSide:
    return {"where": population.where, "start": population.start, "end": population.end, "n": n}
