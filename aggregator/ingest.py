"""Ingest: a batch of privatized reports, counted once each, acknowledged after commit."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from flask import Blueprint, current_app

from aggregator.admission import admit
from aggregator.auth import check_upload_key
from aggregator.body import json_body
from aggregator.metrics import REPORTS_ACCEPTED, REPORTS_REJECTED
from aggregator.problems import ApiError
from aggregator.quotas import charge
from aggregator.store import get_store
from aggregator.tasks import find_task
from shared import DecodeError, Rejection, decode_batch
from shared.contract import replays, upload_answer

bp = Blueprint("ingest", __name__, url_prefix="/v1/tasks")


@bp.post("/<task_id>/reports")
def upload(task_id: str) -> dict[str, Any]:
    """Validate a batch, add its new reports to the sums and say what was refused."""
    stored = find_task(task_id)
    check_upload_key(stored.upload_key_hash)
    task, body, config = stored.config, json_body(), current_app.config
    _check_count(body, int(config["MAX_REPORTS_PER_BATCH"]))
    charge(
        task_id,
        len(body["reports"])
        if isinstance(body, dict) and isinstance(body.get("reports"), list)
        else 1,
    )
    try:
        decoded, rejected = decode_batch(task, body)
    except DecodeError as error:
        raise ApiError(400, "invalid_batch", str(error)) from None
    now = time.time()
    admitted = admit(
        task,
        decoded,
        now,
        acceptance_window=int(config["ACCEPTANCE_WINDOW"]),
        clock_skew=int(config["CLOCK_SKEW"]),
    )
    replayed = (
        get_store().add_reports(task, admitted.envelopes, admitted.expires)
        if admitted.envelopes
        else set()
    )
    rejected += admitted.rejected + replays(replayed)
    accepted = len(admitted.envelopes) - len(replayed)
    _count(task_id, accepted, rejected)
    _collect_expired(now)
    return upload_answer(accepted, rejected)


def _check_count(body: Any, limit: int) -> None:
    reports = body.get("reports") if isinstance(body, dict) else None
    if isinstance(reports, list) and len(reports) > limit:
        raise ApiError(
            413,
            "too_many_reports",
            f"a batch holds at most {limit} reports, got {len(reports)}; split it",
            limit=limit,
        )


def _count(task_id: str, accepted: int, rejected: list[Rejection]) -> None:
    if accepted:
        REPORTS_ACCEPTED.labels(task_id).inc(accepted)
    for reason, count in Counter(r.reason for r in rejected).items():
        REPORTS_REJECTED.labels(reason).inc(count)


def _collect_expired(now: float) -> None:
    # Forgetting expired ids is cheap but needs the write lock: do it now and then.
    last = current_app.extensions.get("ldp_last_collect", 0.0)
    if now - last >= float(current_app.config["COLLECT_INTERVAL"]):
        current_app.extensions["ldp_last_collect"] = now
        get_store().collect_expired(int(now))
