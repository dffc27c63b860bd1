"""Estimates: debiased counts with confidence intervals, and comparisons, for analysts."""

from __future__ import annotations

from flask import Blueprint, current_app

from ldp_telemetry.aggregator.api.auth import require_role
from ldp_telemetry.aggregator.api.body import json_body
from ldp_telemetry.aggregator.api.resources import get_store
from ldp_telemetry.aggregator.core.analysis import compare as comparison
from ldp_telemetry.aggregator.core.analysis.estimates import answer
from ldp_telemetry.aggregator.core.analysis.query import check_cost, parse_query
from ldp_telemetry.aggregator.core.tasks import find_task
from ldp_telemetry.shared.answers import CompareAnswer, EstimateAnswer
from ldp_telemetry.shared.contract import COMPARE_PATH, ESTIMATES_PATH, rule

bp = Blueprint("estimates", __name__)


@bp.post(rule(ESTIMATES_PATH))
@require_role("analyst")
def estimate(task_id: str) -> EstimateAnswer:
    """Estimate each candidate's count over the buckets starting in [start, end)."""
    config, store = current_app.config, get_store()
    task = find_task(task_id, store).config
    query = parse_query(task, json_body(), int(config["MAX_CANDIDATES"]))
    check_cost(task, query.candidates, int(config["MAX_ESTIMATE_WORK"]))
    return answer(
        task,
        query.candidates,
        query.window,
        store,
        max_cells=int(config["MAX_ESTIMATE_CELLS"]),
        fake_fraction=query.fake_fraction,
        normalize=query.normalize,
        breakdown=query.breakdown,
    )


@bp.post(rule(COMPARE_PATH))
@require_role("analyst")
def compare(task_id: str) -> CompareAnswer:
    """Compare two slices or two time ranges value by value (differences as tests)."""
    config, store = current_app.config, get_store()
    task = find_task(task_id, store).config
    query = comparison.parse_compare(task, json_body(), int(config["MAX_CANDIDATES"]))
    check_cost(task, query.candidates, int(config["MAX_ESTIMATE_WORK"]))
    return comparison.answer(task, query, store, max_cells=int(config["MAX_ESTIMATE_CELLS"]))
