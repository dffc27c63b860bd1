"""Tasks: created by an admin, public to every client (cacheable, ETag = fingerprint)."""

from __future__ import annotations

import hashlib
import math
from typing import Any

from flask import Blueprint, Response, current_app, jsonify, request, url_for

from aggregator.auth import hash_token, new_token, require_role
from aggregator.body import json_body
from aggregator.problems import ApiError
from aggregator.sealing_keys import check_sealable, seal_fields, task_etag
from aggregator.store import Store, StoredTask, TaskExists, get_store
from shared import LdpError, TaskConfig
from shared.contract import CACHE_CONTROL
from shared.mechanisms.auto import AUTO_FIELDS
from shared.task import TASK_FIELDS

bp = Blueprint("tasks", __name__, url_prefix="/v1/tasks")
# hash_seed is normally left out (the server draws it); giving it recreates a sketch task's
# hash family exactly, e.g. on a second collector whose sums will be merged with this one's.
CREATE_FIELDS = (
    (TASK_FIELDS - {"fingerprint"}) | {"upload_key_required", "archive"} | set(AUTO_FIELDS)
)


@bp.get("")
def list_tasks() -> Response:
    """Return every task's public configuration; 304 if the client's copy is current.

    The ETag digests every task's id and fingerprint: it changes exactly when a task is
    added (tasks are immutable).
    """
    stored = get_store().list_tasks()
    tasks = [s.config for s in stored]
    # A sealed task's ETag names its current key: a rotation changes the list's too.
    digest = hashlib.sha256(
        "\n".join(f"{t.task_id} {task_etag(current_app, t)}" for t in tasks).encode()
    )
    etag = digest.hexdigest()[:32]
    if request.if_none_match.contains(etag):
        response = Response(status=304)
    else:
        response = jsonify(tasks=[served(s) for s in stored])
    response.set_etag(etag)
    response.headers["Cache-Control"] = CACHE_CONTROL
    return response


@bp.get("/<task_id>")
def get_task(task_id: str) -> Response:
    """Return one task's public configuration; 304 if the client's copy is current."""
    stored = find_task(task_id)
    response = jsonify(served(stored))
    response.set_etag(task_etag(current_app, stored.config))
    response.headers["Cache-Control"] = CACHE_CONTROL
    response.make_conditional(request)
    return response


@bp.post("")
@require_role("admin")
def create_task() -> tuple[dict[str, Any], int, dict[str, str]]:
    """Create a task; the server draws the hash seed (and the upload key, if asked)."""
    stored, upload_key = build_task(json_body())
    try:
        get_store().create_task(stored)
    except TaskExists:
        raise ApiError(
            409,
            "task_exists",
            f"a task {stored.config.task_id!r} exists already; "
            "tasks are immutable, so choose a new task_id",
        ) from None
    body = created_body(stored, upload_key)
    location = url_for("tasks.get_task", task_id=stored.config.task_id)
    return body, 201, {"Location": location}


def served(stored: StoredTask) -> dict[str, Any]:
    """Return a task's public JSON: its configuration and this collector's policy for it.

    ``upload_key_required`` and ``archive`` (the collector keeps the privatized reports it
    accepts) are served so that a device knows them before its first upload; they are not
    part of the fingerprint (PROTOCOL.md §1).
    """
    return {
        **stored.config.to_dict(),
        "upload_key_required": stored.upload_key_hash is not None,
        "archive": stored.archive,
        **seal_fields(current_app, stored.config),  # a sealed task's current public key
    }


def created_body(stored: StoredTask, upload_key: str | None) -> dict[str, Any]:
    """Return what creating a task answers: its public JSON, and the upload key once."""
    body = served(stored)
    if upload_key is not None:
        body["upload_key"] = upload_key  # shown once: only its hash is stored
    return body


def build_task(params: Any) -> tuple[StoredTask, str | None]:
    """Return a new task from creation parameters, with its upload key if it needs one."""
    if not isinstance(params, dict):
        raise ApiError(400, "invalid_task", "the body must be a JSON object of task parameters")
    unknown = set(params) - CREATE_FIELDS
    if unknown:
        raise ApiError(
            400,
            "invalid_task",
            f"unknown task fields {sorted(unknown)}; allowed: {sorted(CREATE_FIELDS)}",
        )
    params = dict(params)
    needs_key = params.pop("upload_key_required", False)
    if not isinstance(needs_key, bool):
        raise ApiError(400, "invalid_task", "upload_key_required must be true or false")
    archive = params.pop("archive", False)
    if not isinstance(archive, bool):
        raise ApiError(400, "invalid_task", "archive must be true or false")
    try:
        task = TaskConfig.create(**params)
    except (LdpError, TypeError, ValueError, OverflowError) as error:
        raise ApiError(400, "invalid_task", str(error)) from None
    _check_open_buckets(task)
    unsealable = check_sealable(current_app, task)
    if unsealable:
        raise ApiError(400, "invalid_task", unsealable)
    _check_table_size(task)
    upload_key = new_token() if needs_key else None
    key_hash = hash_token(upload_key) if upload_key else None
    return StoredTask(task, key_hash, archive), upload_key


def _check_open_buckets(task: TaskConfig) -> None:
    """Refuse a bucket width that lets uploads open more than MAX_BUCKETS_PER_TASK buckets.

    Reports are accepted for every bucket of the acceptance window, and each bucket holds
    up to k sums rows: the width bounds what crafted reports with many distinct times can
    make a task store.
    """
    window = int(current_app.config["ACCEPTANCE_WINDOW"])
    limit = int(current_app.config["MAX_BUCKETS_PER_TASK"])
    shortest = math.ceil(window / limit)
    if task.time_precision < shortest:
        raise ApiError(
            400,
            "invalid_task",
            f"time_precision must be at least {shortest} s: reports are accepted for "
            f"{window} s, and a task may have at most {limit} buckets open "
            "(MAX_BUCKETS_PER_TASK)",
        )


def _check_table_size(task: TaskConfig) -> None:
    """Refuse a task whose one bucket's table is more than an estimate may read."""
    rows, width = task.mechanism_object.sums_shape
    limit = int(current_app.config["MAX_ESTIMATE_CELLS"])
    if rows * width > limit:
        raise ApiError(
            400,
            "invalid_task",
            f"a table of {rows:,} × {width:,} = {rows * width:,} counters is more than one "
            f"estimate may read ({limit:,}, MAX_ESTIMATE_CELLS): choose a smaller k or m",
        )


def find_task(task_id: str, store: Store | None = None) -> StoredTask:
    """Return a stored task, or raise the 404 problem ``unknown_task``."""
    stored = (store or get_store()).get_task(task_id)
    if stored is None:
        raise ApiError(
            404,
            "unknown_task",
            f"there is no task {task_id!r}; list the tasks with GET /v1/tasks",
            task_id=task_id[:64],
        )
    return stored
