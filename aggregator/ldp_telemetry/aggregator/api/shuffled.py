"""Shuffled batches: a shuffler's forwarded reports, counted once each, the batch recorded.

``PUT /v1/tasks/{id}/shuffled/{batch_id}?uploads=K`` takes the body of an ordinary upload from a
shuffler token (ldp_telemetry.shuffler). Its reports go through the same intake as a device's upload
(task, fingerprint, time window, one count per report id); the task's upload key is not asked: the
shuffler checked each device's against the key's SHA-256, which ``GET /v1/tasks/{id}/upload-key``
gives a shuffler token. The batch is then recorded — per bucket, with K, the distinct uploads it was
drawn from — so estimates can state the central epsilon
(ldp_telemetry.aggregator.core.analysis.central). A retried batch (same id) records nothing new and
its reports are replays: forwarding twice never counts twice.

For a task with public dimensions the shuffler also gives ``&slice_counts=i:K,...``: the distinct
uploads among each slice's reports. An attacker who knows a device's dimensions looks only
at its slice, so each slice's central epsilon uses its own count: the batch records, per
slice, min(K, the slice's admitted reports) (a task without dimensions: its one slice, the
batch's size; a batch without ``slices``, from a shuffler before 1.1: none).
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from flask import Blueprint, request

from ldp_telemetry.aggregator.api.auth import require_role
from ldp_telemetry.aggregator.api.body import read_body
from ldp_telemetry.aggregator.api.resources import get_intake, get_store
from ldp_telemetry.aggregator.core.intake import Headers
from ldp_telemetry.aggregator.core.problems import ApiError
from ldp_telemetry.aggregator.core.tasks import find_task
from ldp_telemetry.aggregator.store import ShuffledBatch
from ldp_telemetry.shared import DecodeError, TaskConfig
from ldp_telemetry.shared.contract import (
    INVALID_BATCH,
    SHUFFLED_PATH,
    SHUFFLED_SLICES,
    SHUFFLED_UPLOADS,
    UPLOAD_KEY_PATH,
    UploadAnswer,
    rule,
)
from ldp_telemetry.shared.wire import b64decode

bp = Blueprint("shuffled", __name__)
BATCH_ID_BYTES = 16


@bp.get(rule(UPLOAD_KEY_PATH))
@require_role("shuffler")
def upload_key(task_id: str) -> dict[str, Any]:
    """Give a shuffler the SHA-256 of the task's upload key (null: uploads are public), so
    that it refuses the uploads the collector would (the key itself is never stored)."""
    return {
        "task_id": task_id,
        "upload_key_sha256": find_task(task_id, get_store()).upload_key_hash,
    }


@bp.put(rule(SHUFFLED_PATH))
@require_role("shuffler")
def receive(task_id: str, batch_id: str) -> UploadAnswer:
    """Count a shuffled batch's new reports and record the batch's size."""
    try:
        raw_id = b64decode(batch_id, BATCH_ID_BYTES, "batch_id")
    except DecodeError as error:
        raise ApiError(400, INVALID_BATCH, str(error)) from None
    uploads = request.args.get(SHUFFLED_UPLOADS, type=int)
    if uploads is None or uploads < 1:
        raise ApiError(400, INVALID_BATCH, "give ?uploads=K, the distinct uploads (K ≥ 1)")
    intake = get_intake()
    sliced = _slice_uploads(find_task(task_id, get_store()).config, request.args)
    headers = Headers(request.headers.get("Content-Type"), request.headers.get("Content-Encoding"))
    body = read_body(intake.max_body)
    checked = intake.check(task_id, headers, body, time.time(), shuffled=True)
    replayed = set() if checked.upload is None else intake.committer.add(checked.upload)
    if checked.upload is not None:
        envelopes = checked.upload.envelopes
        per_bucket = Counter(envelope.time for envelope in envelopes)
        store = get_store()
        for bucket, admitted in per_bucket.items():
            # A batch holds one bucket; should one span several, each part is its own row.
            key = raw_id if len(per_bucket) == 1 else raw_id + bucket.to_bytes(8, "big")
            size = min(uploads, admitted)
            in_slices = Counter(e.slice for e in envelopes if e.time == bucket)
            counts = (
                {0: size}
                if checked.upload.task.dimensions is None
                else {i: min(k, in_slices[i]) for i, k in sliced.items() if in_slices[i]}
            )
            store.add_shuffled_batch(
                ShuffledBatch(task_id, key, bucket, size, admitted, slice_counts=counts)
            )
    return intake.answer(checked, replayed)


def _slice_uploads(task: TaskConfig, args: Any) -> dict[int, int]:
    """Return the ``slices`` parameter's distinct uploads per slice index ({}: none given),
    or raise the 400 that says what is wrong with it."""
    given = args.get(SHUFFLED_SLICES)
    if not given:
        return {}
    if task.dimensions is None:
        raise ApiError(400, INVALID_BATCH, f"task {task.task_id!r} has no slices to count")
    counts: dict[int, int] = {}
    for part in given.split(","):
        index, _, uploads = part.partition(":")
        if not (index.isdigit() and uploads.isdigit()) or int(index) >= task.slice_count:
            raise ApiError(
                400,
                INVALID_BATCH,
                f"slices must be index:uploads pairs with an index below {task.slice_count}, "
                f"got {part[:40]!r}",
            )
        if int(uploads) >= 1:
            counts[int(index)] = int(uploads)
    return counts
