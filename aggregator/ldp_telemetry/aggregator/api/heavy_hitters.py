"""Heavy hitters: the most frequent strings of a task, found without a candidate list."""

from __future__ import annotations

from flask import Blueprint

from ldp_telemetry.aggregator.api.auth import require_role
from ldp_telemetry.aggregator.api.body import json_body
from ldp_telemetry.aggregator.api.resources import get_store
from ldp_telemetry.aggregator.core.analysis.heavy_hitters import answer, parse_request
from ldp_telemetry.aggregator.core.tasks import find_task
from ldp_telemetry.shared.answers import HeavyHitterAnswer
from ldp_telemetry.shared.contract import HEAVY_HITTERS_PATH, rule

bp = Blueprint("heavy_hitters", __name__)


@bp.post(rule(HEAVY_HITTERS_PATH))
@require_role("analyst")
def heavy_hitters(task_id: str) -> HeavyHitterAnswer:
    """Return the ``top`` strings over the buckets starting in [start, end)."""
    store = get_store()
    task = find_task(task_id, store).config
    top, survivors, window, breakdown = parse_request(task, json_body())
    return answer(task, top, survivors, window, store, breakdown)
