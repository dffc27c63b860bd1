"""Tasks: created by an admin, public to every client (cacheable, ETag = fingerprint)."""

from __future__ import annotations

import hashlib
from typing import Any

from flask import Blueprint, Response, current_app, jsonify, request, url_for

from ldp_telemetry.aggregator.api.auth import require_role
from ldp_telemetry.aggregator.api.body import json_body
from ldp_telemetry.aggregator.api.resources import get_store
from ldp_telemetry.aggregator.core.problems import ApiError
from ldp_telemetry.aggregator.core.sealing_keys import keyring_of, task_etag
from ldp_telemetry.aggregator.core.tasks import build_task, created_body, find_task, served
from ldp_telemetry.aggregator.store import TaskExists
from ldp_telemetry.shared.contract import CACHE_CONTROL, TASK_EXISTS, TASK_PATH, TASKS_PATH, rule

bp = Blueprint("tasks", __name__)


@bp.get(TASKS_PATH)
def list_tasks() -> Response:
    """Return every task's public configuration; 304 if the client's copy is current.

    The ETag digests every task's id and fingerprint: it changes exactly when a task is
    added (tasks are immutable).
    """
    keyring = keyring_of(current_app.config)
    stored = get_store().list_tasks()
    tasks = [s.config for s in stored]
    # A sealed task's ETag names its current key: a rotation changes the list's too.
    digest = hashlib.sha256(
        "\n".join(f"{t.task_id} {task_etag(keyring, t)}" for t in tasks).encode()
    )
    etag = digest.hexdigest()[:32]
    if request.if_none_match.contains(etag):
        response = Response(status=304)
    else:
        response = jsonify(tasks=[served(s, keyring) for s in stored])
    response.set_etag(etag)
    response.headers["Cache-Control"] = CACHE_CONTROL
    return response


@bp.get(rule(TASK_PATH))
def get_task(task_id: str) -> Response:
    """Return one task's public configuration; 304 if the client's copy is current."""
    keyring = keyring_of(current_app.config)
    stored = find_task(task_id, get_store())
    response = jsonify(served(stored, keyring))
    response.set_etag(task_etag(keyring, stored.config))
    response.headers["Cache-Control"] = CACHE_CONTROL
    response.make_conditional(request)
    return response


@bp.post(TASKS_PATH)
@require_role("admin")
def create_task() -> tuple[dict[str, Any], int, dict[str, str]]:
    """Create a task; the server draws the hash seed (and the upload key, if asked)."""
    stored, upload_key = build_task(json_body(), current_app.config)
    try:
        get_store().create_task(stored)
    except TaskExists:
        raise ApiError(
            409,
            TASK_EXISTS,
            f"a task {stored.config.task_id!r} exists already; "
            "tasks are immutable, so choose a new task_id",
        ) from None
    body = created_body(stored, upload_key, keyring_of(current_app.config))
    location = url_for("tasks.get_task", task_id=stored.config.task_id)
    return body, 201, {"Location": location}
