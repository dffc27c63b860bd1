"""Estimates: debiased counts with confidence intervals, for analysts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flask import Blueprint, current_app

from aggregator.auth import require_role
from aggregator.body import json_body
from aggregator.central import central_fields
from aggregator.problems import ApiError
from aggregator.query import Window, check_cost, parse_query
from aggregator.store import SumsSource, SumsView, get_store
from aggregator.tasks import find_task
from shared import TaskConfig
from shared.mechanisms.longitudinal import Longitudinal

bp = Blueprint("estimates", __name__, url_prefix="/v1/tasks")


@bp.post("/<task_id>/estimates")
@require_role("analyst")
def estimate(task_id: str) -> dict[str, Any]:
    """Estimate each candidate's count over the buckets starting in [start, end)."""
    task = find_task(task_id).config
    query = parse_query(task, json_body(), int(current_app.config["MAX_CANDIDATES"]))
    check_cost(task, query.candidates, int(current_app.config["MAX_ESTIMATE_WORK"]))
    return answer(task, query.candidates, query.window)


def answer(
    task: TaskConfig,
    candidates: Sequence[Any] | None,
    window: Window,
    source: SumsSource | None = None,
) -> dict[str, Any]:
    """Return the estimates body for checked candidates and window (the view and the CLI).

    ``source``: where the sums come from (default: the store; the CLI may give a sums file).
    """
    source = source or get_store()
    mechanism = task.mechanism_object
    with source.read_sums(task, window.start, window.end) as sums:
        check_min_batch(task, sums, "estimates")
        result = mechanism.estimate(sums, candidates, level=window.level)
    extra = {}
    if isinstance(mechanism, Longitudinal):
        # A device's reports in different buckets share its permanent response.
        buckets = sum(1 for bucket in source.buckets(task) if window.holds(bucket))
        result = mechanism.over_buckets(result, buckets)
        extra["buckets"] = buckets
    return {
        "task_id": task.task_id,
        "mechanism": task.mechanism,
        "n": result.n,
        "epsilon": task.asked_epsilon,
        "effective_epsilon": task.effective_epsilon,
        **central_fields(task, source, window, result.n),
        "level": window.level,
        "start": window.start,
        "end": window.end,
        "estimates": result.rows(),
        **extra,
    }


def check_min_batch(task: TaskConfig, sums: SumsView, what: str) -> None:
    """Refuse (422) to answer from fewer reports than the task's min_batch_size."""
    if sums.total < task.min_batch_size:
        raise ApiError(
            422,
            "below_min_batch_size",
            f"only {sums.total} reports in this range; {what} need at least "
            f"{task.min_batch_size}: widen the range or wait",
            n=sums.total,
            min_batch_size=task.min_batch_size,
        )
