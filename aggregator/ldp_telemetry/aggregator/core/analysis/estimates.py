"""Estimates: debiased counts with confidence intervals, for analysts.

The answer the API (ldp_telemetry.aggregator.api.estimates), the dashboard and the command line
give, over any :class:`~ldp_telemetry.aggregator.store.SumsSource` (the store, or a sums file).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ldp_telemetry.aggregator.core.analysis.central import central_fields
from ldp_telemetry.aggregator.core.analysis.query import Window, check_scan
from ldp_telemetry.aggregator.core.problems import ApiError
from ldp_telemetry.aggregator.store import SumsSource, SumsView
from ldp_telemetry.shared import TaskConfig
from ldp_telemetry.shared.answers import EstimateAnswer, EstimateRow
from ldp_telemetry.shared.contract import BELOW_MIN_BATCH_SIZE
from ldp_telemetry.shared.estimates import Estimates
from ldp_telemetry.shared.mechanisms import poisoning, postprocessing
from ldp_telemetry.shared.mechanisms.features import longitudinal


def answer(
    task: TaskConfig,
    candidates: Sequence[Any] | None,
    window: Window,
    source: SumsSource,
    *,
    max_cells: int | None = None,
    fake_fraction: float | None = None,
    normalize: bool = False,
) -> EstimateAnswer:
    """Return the estimates body for checked candidates and window (the view and the CLI).

    ``source``: where the sums come from (the store, or a sums file the CLI reads);
    ``max_cells``: the collector's MAX_ESTIMATE_CELLS, the most a store read may scan
    (None: no bound, for a sums file).
    ``anomaly`` tests the window's sums against honest devices (when the mechanism can);
    ``fake_fraction`` adds the worst shift that share of fake reports can cause;
    ``normalize`` adds each value's Norm-Sub count (the whole domain summing to n).
    """
    mechanism = task.mechanism_object
    layer = longitudinal(mechanism)
    # A longitudinal device's reports in different buckets share its permanent response.
    buckets = 1
    if layer is not None:
        buckets = sum(1 for bucket in source.buckets(task) if window.holds(bucket))
    with source.read_sums(task, window.start, window.end) as sums:
        if max_cells is not None:  # a streamed sketch knows its buckets; a dense row is one
            check_scan(task, getattr(sums, "buckets", 1), max_cells)
        check_min_batch(task, sums, "estimates")
        result = mechanism.estimate(sums, candidates, level=window.level)
        checks = mechanism.check_sums(sums) if layer is None else layer.check_sums(sums, buckets)
    refused = source.refusals(task, window.start, window.end)
    anomaly = poisoning.anomaly(checks, refused, result.n) if checks or refused else None
    reach = mechanism.reach()
    bound = None
    if fake_fraction is not None and reach is not None:
        bound = poisoning.poisoning_bound(reach, fake_fraction, result.n)
    if layer is not None:
        result = layer.over_buckets(result, buckets)
    body: EstimateAnswer = {
        "task_id": task.task_id,
        "mechanism": task.mechanism,
        "n": result.n,
        "epsilon": task.asked_epsilon,
        "effective_epsilon": task.effective_epsilon,
        **central_fields(task, source, window, result.n),
        "level": window.level,
        "start": window.start,
        "end": window.end,
        "estimates": _rows(result, normalize),
    }
    # The optional fields come last, in this order (as the answer has always listed them).
    if anomaly is not None:
        body["anomaly"] = anomaly
    if bound is not None:
        body["poisoning"] = bound
    if layer is not None:
        body["buckets"] = buckets
    return body


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
