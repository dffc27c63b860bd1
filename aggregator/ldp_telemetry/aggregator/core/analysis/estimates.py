"""Estimates: debiased counts with confidence intervals, for analysts.

The answer the API (ldp_telemetry.aggregator.api.estimates), the dashboard and the command line
give, over any :class:`~ldp_telemetry.aggregator.store.SumsSource` (the store, or a sums file).
With ``group_by`` or ``where`` it adds one block per row of the breakdown
(:mod:`ldp_telemetry.aggregator.core.analysis.slices`), each estimated from its own slices' sums
exactly as the totals are from all of them; the totals, the rows and the reports per slice
that decide them come from one read of the store (``read_slices``: one snapshot).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ldp_telemetry.aggregator.core.analysis import slices as breakdowns
from ldp_telemetry.aggregator.core.analysis.central import Shuffle, central_fields
from ldp_telemetry.aggregator.core.analysis.query import Breakdown, Window, check_scan
from ldp_telemetry.aggregator.core.problems import ApiError
from ldp_telemetry.aggregator.store import SumsSource, SumsView
from ldp_telemetry.shared import TaskConfig
from ldp_telemetry.shared.answers import (
    Anomaly,
    EstimateAnswer,
    EstimateRow,
    EstimateSlice,
    PoisoningBound,
)
from ldp_telemetry.shared.contract import BELOW_MIN_BATCH_SIZE
from ldp_telemetry.shared.estimates import Estimates
from ldp_telemetry.shared.mechanisms import poisoning, postprocessing
from ldp_telemetry.shared.mechanisms.features import longitudinal


@dataclass(frozen=True)
class Asked:
    """What an estimates query asks besides its candidates and window."""

    max_cells: int | None = None
    fake_fraction: float | None = None
    normalize: bool = False


@dataclass(frozen=True)
class Measured:
    """One population's estimates (the totals, or one row of a breakdown)."""

    n: int
    rows: list[EstimateRow]
    anomaly: Anomaly | None
    poisoning: PoisoningBound | None


def answer(
    task: TaskConfig,
    candidates: Sequence[Any] | None,
    window: Window,
    source: SumsSource,
    *,
    max_cells: int | None = None,
    fake_fraction: float | None = None,
    normalize: bool = False,
    breakdown: Breakdown | None = None,
) -> EstimateAnswer:
    """Return the estimates body for checked candidates and window (the view and the CLI).

    ``source``: where the sums come from (the store, or a sums file the CLI reads);
    ``max_cells``: the collector's MAX_ESTIMATE_CELLS, the most a store read may scan
    (None: no bound, for a sums file).
    ``anomaly`` tests the window's sums against honest devices (when the mechanism can);
    ``fake_fraction`` adds the worst shift that share of fake reports can cause;
    ``normalize`` adds each value's Norm-Sub count (the whole domain summing to n);
    ``breakdown`` (group_by, where) adds ``breakdown`` and one ``slices`` block per row.
    """
    asked = Asked(max_cells, fake_fraction, normalize)
    layer = longitudinal(task.mechanism_object)
    # A longitudinal device's reports in different buckets share its permanent response.
    buckets = 1
    if layer is not None:
        buckets = sum(1 for bucket in source.buckets(task) if window.holds(bucket))
    refused = source.refusals(task, window.start, window.end)
    with source.read_slices(task, window.start, window.end) as sliced:  # one read for all rows
        totals = measure(task, candidates, window, sliced.sums(), asked, buckets, refused)
        shuffle = Shuffle(task, source, window, totals.n, sliced.counts)
        body: EstimateAnswer = {
            "task_id": task.task_id,
            "mechanism": task.mechanism,
            "n": totals.n,
            "epsilon": task.asked_epsilon,
            "effective_epsilon": task.effective_epsilon,
            **central_fields(shuffle, totals.n),
            "level": window.level,
            "start": window.start,
            "end": window.end,
            "estimates": totals.rows,
        }
        # The optional fields come last, in this order (as the answer has always listed them).
        if totals.anomaly is not None:
            body["anomaly"] = totals.anomaly
        if totals.poisoning is not None:
            body["poisoning"] = totals.poisoning
        if layer is not None:
            body["buckets"] = buckets
        if breakdown is not None:
            plan = breakdowns.plan(task, breakdown, sliced.counts)
            body["breakdown"] = plan.summary
            parts = [sliced.sums(row.slices) for row in plan.rows]
            ready = rows_estimated(task, candidates, window, parts)
            body["slices"] = [
                _slice(task, candidates, window, part, asked, buckets, shuffle, row, result)
                for row, part, result in zip(plan.rows, parts, ready, strict=True)
            ]
    return body


def measure(
    task: TaskConfig,
    candidates: Sequence[Any] | None,
    window: Window,
    sums: SumsView,
    asked: Asked,
    buckets: int,
    refused: int,
    ready: Estimates | None = None,
) -> Measured:
    """Return the estimates of the reports in ``sums`` (the totals, or some slices') over
    ``window``.

    ``buckets``: the window's buckets holding the task's reports (longitudinal tasks; a
    row's own may be fewer, and the bound on the shared permanent noise only grows with it);
    ``refused``: the implausible reports refused (counted per task, so 0 for a row);
    ``ready``: the mechanism's estimate of ``sums`` if made already (:func:`rows_estimated`).
    """
    mechanism = task.mechanism_object
    layer = longitudinal(mechanism)
    if asked.max_cells is not None:  # a streamed sketch knows its buckets; a dense row is one
        check_scan(task, getattr(sums, "buckets", 1), asked.max_cells)
    check_min_batch(task, sums, "estimates")
    result = (
        ready if ready is not None else mechanism.estimate(sums, candidates, level=window.level)
    )
    checks = mechanism.check_sums(sums) if layer is None else layer.check_sums(sums, buckets)
    anomaly = poisoning.anomaly(checks, refused, result.n) if checks or refused else None
    bound, reach = None, None if asked.fake_fraction is None else mechanism.reach()
    if asked.fake_fraction is not None and reach is not None:
        bound = poisoning.poisoning_bound(reach, asked.fake_fraction, result.n)
    if layer is not None:
        result = layer.over_buckets(result, buckets)
    return Measured(result.n, _rows(result, asked.normalize), anomaly, bound)


def _slice(
    task: TaskConfig,
    candidates: Sequence[Any] | None,
    window: Window,
    sums: SumsView,
    asked: Asked,
    buckets: int,
    shuffle: Shuffle,
    row: breakdowns.PlannedRow,
    ready: Estimates | None,
) -> EstimateSlice:
    """Return one row of a breakdown, estimated from its own slices' ``sums`` as the
    totals are, or as :func:`rows_estimated` made it (``ready``)."""
    measured = measure(task, candidates, window, sums, asked, buckets, 0, ready)
    block: EstimateSlice = {
        "dimensions": row.dimensions,
        "n": measured.n,
        **central_fields(shuffle, measured.n, row.slices),
        "estimates": measured.rows,
        "rolled_up": row.rolled_up,
    }
    if measured.anomaly is not None:
        block["anomaly"] = measured.anomaly
    if measured.poisoning is not None:
        block["poisoning"] = measured.poisoning
    if longitudinal(task.mechanism_object) is not None:
        block["buckets"] = buckets
    return block


def rows_estimated(
    task: TaskConfig, candidates: Sequence[Any] | None, window: Window, parts: list[SumsView]
) -> list[Estimates | None]:
    """Return the estimates of a breakdown's rows ``parts`` made by the mechanism's
    ``estimate_rows`` (Square Wave: a row's bootstrap refit searches run side by side, issue
    38), or None per row for the others' ``estimate``; None too for a row below
    ``min_batch_size`` (:func:`measure` refuses it)."""
    rows = getattr(task.mechanism_object, "estimate_rows", None)
    ready: list[Estimates | None] = [None] * len(parts)
    if rows is None:
        return ready
    kept = [i for i, part in enumerate(parts) if part.total >= task.min_batch_size]
    for i, result in zip(
        kept, rows([parts[i] for i in kept], candidates, window.level), strict=True
    ):
        ready[i] = result
    return ready


def check_min_batch(task: TaskConfig, sums: SumsView, what: str) -> None:
    """Refuse (422) to answer from fewer reports than the task's min_batch_size."""
    if sums.total < task.min_batch_size:
        raise ApiError(
            422,
            BELOW_MIN_BATCH_SIZE,
            f"only {sums.total} reports in this range; {what} need at least "
            f"{task.min_batch_size}: widen the range or wait",
            n=sums.total,
            min_batch_size=task.min_batch_size,
        )


def _rows(result: Estimates, normalize: bool) -> list[EstimateRow]:
    """Return the answer's rows, with the Norm-Sub count beside each estimate if asked."""
    rows = result.rows()
    if normalize:
        for row, count in zip(
            rows, postprocessing.norm_sub(result.estimate, result.n), strict=True
        ):
            row["normalized"] = float(count)
    return rows
