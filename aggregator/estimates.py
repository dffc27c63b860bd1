"""Estimates: debiased counts with confidence intervals, for analysts."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, current_app

from aggregator.auth import require_role
from aggregator.body import json_body
from aggregator.problems import ApiError
from aggregator.query import parse_query
from aggregator.store import get_store
from aggregator.tasks import find_task

bp = Blueprint("estimates", __name__, url_prefix="/v1/tasks")


@bp.post("/<task_id>/estimates")
@require_role("analyst")
def estimate(task_id: str) -> dict[str, Any]:
    """Estimate each candidate's count over the buckets starting in [start, end)."""
    task = find_task(task_id).config
    query = parse_query(task, json_body(), int(current_app.config["MAX_CANDIDATES"]))
    mechanism = task.mechanism_object
    with get_store().read_sums(task, query.start, query.end) as sums:
        if sums.total < task.min_batch_size:
            raise ApiError(422, "below_min_batch_size",
                           f"only {sums.total} reports in this range; estimates need at "
                           f"least {task.min_batch_size}: widen the range or wait",
                           n=sums.total, min_batch_size=task.min_batch_size)
        result = mechanism.estimate(sums, query.candidates, level=query.level)
    return {"task_id": task_id, "mechanism": task.mechanism, "n": result.n,
            "epsilon": task.asked_epsilon, "effective_epsilon": task.effective_epsilon,
            "level": query.level, "start": query.start, "end": query.end,
            "estimates": result.rows()}
