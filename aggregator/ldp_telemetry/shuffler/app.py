"""The shuffler's HTTP face: devices upload to it exactly as to the collector.

``POST /v1/tasks/{id}/reports`` takes the collector's upload body and answers 202 with
what it can say per report now (a malformed report, a time in a future bucket, a report id
it has seen before), after checking the task's upload key as the collector would
(ldp_telemetry.shuffler.upload_keys); the
collector's verdict follows in batches (ldp_telemetry.shuffler.forwarder). Reports are in the
spool, committed, before the answer. A full spool answers 503 with Retry-After, which the
SDK honours. ``GET /v1/tasks[/{id}]`` is passed to the collector (the SDK fetches task
configurations from the same URL), on at most ``BRIDGE_THREADS`` − 1 threads at once and
within ``RELAY_TIMEOUT``: a slow or stopped collector never holds every thread, so uploads,
which only commit to the spool, are still answered (else 503 ``upstream_unavailable`` with
Retry-After); ``/healthz`` and ``/readyz`` serve operations. No
address, header or arrival time is stored or logged: a report is kept as its own JSON.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import requests
from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException
from werkzeug.wsgi import get_input_stream

from ldp_telemetry.aggregator.core.body import decode_json, read_capped
from ldp_telemetry.aggregator.core.problems import (
    ANSWERS,
    ApiError,
    answer_of,
    check_protocol,
    http_error_parts,
    too_many_reports,
)
from ldp_telemetry.shared import DecodeError, Rejection
from ldp_telemetry.shared.codec import REPORT_ID_BYTES, replays
from ldp_telemetry.shared.contract import (
    HEALTH_PATH,
    INVALID_BATCH,
    INVALID_MESSAGE,
    PROTOCOL_HEADER,
    READY_PATH,
    REPORT_TOO_EARLY,
    SPOOL_FULL,
    TASK_PATH,
    TASKS_PATH,
    UPLOAD_PATH,
    UPSTREAM_UNAVAILABLE,
    UploadAnswer,
    fill,
    rule,
    upload_answer,
)
from ldp_telemetry.shared.wire import b64decode
from ldp_telemetry.shuffler.forwarder import Forwarder, session_with_retries
from ldp_telemetry.shuffler.spool import Report, Spool
from ldp_telemetry.shuffler.upload_keys import UploadKeys

DEFAULTS: dict[str, Any] = {
    "BATCH_MIN": 1000,  # distinct uploads a batch is drawn from, at least
    "BATCH_MAX": 5000,  # reports per forwarded batch (the collector's per-batch limit)
    "SPOOL_CAPACITY": 1_000_000,  # waiting reports; beyond, uploads get 503
    "MAX_BODY_BYTES": 4 * 1024 * 1024,
    "MAX_REPORTS_PER_BATCH": 5000,
    "RETENTION": 8 * 86400,  # seconds after a report's time its id is remembered
    # The collector's CLOCK_SKEW: a later time is in a future bucket whatever the task, so
    # the collector would refuse it; spooled, it would hold room until its time + RETENTION.
    "CLOCK_SKEW": 600,
    "RETRY_AFTER": 5,  # seconds a device is asked to wait when the spool is full
    # Served by granian behind ldp_telemetry.aggregator.serving.rsgi_bridge, which reads every body
    # on its event loop (a dribbling client holds no thread) and runs requests on these threads.
    "BRIDGE_THREADS": 4,
    # Seconds a relayed task request waits for the collector (to connect, then per read; one
    # retry): a stopped collector held a thread for 90 s, and four of them every upload.
    "RELAY_TIMEOUT": 5,
}
SPOOL, FORWARDER, KEYS = "ldp_shuffler_spool", "ldp_shuffler_forwarder", "ldp_shuffler_keys"
PASSED_ON = ("Content-Type", "ETag", "Cache-Control", "Last-Modified")


def create_app(config: Mapping[str, Any]) -> Flask:
    """Return a shuffler app: ``SPOOL`` (a SQLite path), ``UPSTREAM`` (the collector's
    URL) and ``TOKEN`` (a shuffler token) are required; the rest default (DEFAULTS)."""
    app = Flask(__name__)
    app.config.from_mapping(DEFAULTS)
    app.config.from_mapping(config)
    app.config["MAX_CONTENT_LENGTH"] = int(app.config["MAX_BODY_BYTES"])
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # its lines start with an address
    _answer_problems(app)
    spool = Spool(str(app.config["SPOOL"]), capacity=int(app.config["SPOOL_CAPACITY"]))
    forwarder = Forwarder(
        spool,
        upstream=str(app.config["UPSTREAM"]),
        token=str(app.config["TOKEN"]),
        batch_min=int(app.config["BATCH_MIN"]),
        batch_max=int(app.config["BATCH_MAX"]),
        batch_bytes=int(app.config["MAX_BODY_BYTES"]),  # the collector's limit, by default
    )
    keys = UploadKeys(
        forwarder.upstream, str(app.config["TOKEN"]), retry_after=int(app.config["RETRY_AFTER"])
    )
    app.extensions[SPOOL], app.extensions[FORWARDER], app.extensions[KEYS] = spool, forwarder, keys
    tasks = session_with_retries(retries=1)
    # Relays wait on the collector; uploads must keep a thread whatever it does.
    relays = threading.BoundedSemaphore(max(1, int(app.config["BRIDGE_THREADS"]) - 1))
    relay_timeout = float(app.config["RELAY_TIMEOUT"])

    @app.post(rule(UPLOAD_PATH))
    def upload(task_id: str) -> tuple[UploadAnswer, int]:
        """Spool an upload's reports; answer 202 with the rejections known now."""
        limit = int(app.config["MAX_BODY_BYTES"])
        # a body over the limit is refused before anything else
        stream = get_input_stream(request.environ, max_content_length=None)
        raw = read_capped(stream.read, request.content_length, limit)
        check_protocol(request.headers.get(PROTOCOL_HEADER))  # as the collector does
        keys.check(task_id, request.headers.get("Authorization"))  # the collector won't
        body = decode_json(
            request.headers.get("Content-Type"), request.headers.get("Content-Encoding"), raw, limit
        )
        reports, rejected = _reports(task_id, body, app.config)
        if not spool.has_room(len(reports)):
            error = ApiError(503, SPOOL_FULL, "the shuffler's spool is full; retry later")
            error.headers["Retry-After"] = str(int(app.config["RETRY_AFTER"]))
            raise error
        stored = spool.add(reports) if reports else []
        forwarder.wake.set()
        seen = [r.report_id for r, kept in zip(reports, stored, strict=True) if not kept]
        return upload_answer(sum(stored), rejected + replays(seen)), 202

    @app.get(TASKS_PATH)
    @app.get(rule(TASK_PATH))
    def task_config(task_id: str | None = None) -> Response:
        """Pass a task configuration request to the collector (no device header but the
        ETag it revalidates)."""
        # quoted: an id holding "?" or "#" (sent as %3F, %23) must not become a query
        path = TASKS_PATH if task_id is None else fill(TASK_PATH, task_id=quote(task_id, safe=""))
        etag = request.headers.get("If-None-Match")
        headers = {"If-None-Match": etag} if etag else {}
        if not relays.acquire(blocking=False):
            raise _upstream_unavailable(app.config, "the collector is slow to answer")
        try:
            answer = tasks.get(
                f"{forwarder.upstream}{path}", headers=headers, timeout=relay_timeout
            )
        except requests.RequestException as error:
            raise _upstream_unavailable(app.config, "cannot reach the collector") from error
        finally:
            relays.release()
        passed = {k: answer.headers[k] for k in PASSED_ON if k in answer.headers}
        return Response(answer.content, status=answer.status_code, headers=passed)

    @app.get(HEALTH_PATH)
    def healthz() -> dict[str, Any]:
        return {"status": "ok", "waiting": spool.pending, **forwarder.counters()}

    @app.get(READY_PATH)
    def readyz() -> tuple[dict[str, Any], int]:
        room = spool.has_room(1)
        return {"status": "ready" if room else SPOOL_FULL}, 200 if room else 503

    forwarder.start()
    return app


def _answer_problems(app: Flask) -> None:
    """Answer every error as problem+json, from the core's tables, as the collector does."""

    def answer(error: Exception) -> Response:
        status, headers, body = answer_of(error)
        return Response(body, status=status, headers=headers)

    def http_error(error: HTTPException) -> Response:
        limit = int(app.config["MAX_BODY_BYTES"])
        status, headers, body = http_error_parts(
            error.code,
            error.name,
            error.description,
            error.get_headers(),
            request.content_length,
            limit,
        )
        return Response(body, status=status, headers=headers)

    for kind, _ in ANSWERS:
        app.register_error_handler(kind, answer)
    app.register_error_handler(HTTPException, http_error)


def _upstream_unavailable(config: Mapping[str, Any], why: str) -> ApiError:
    """Return the 503 a task request gets when the collector does not answer it now."""
    error = ApiError(503, UPSTREAM_UNAVAILABLE, f"{why}; retry later")
    error.headers["Retry-After"] = str(int(config["RETRY_AFTER"]))
    return error


def _reports(
    task_id: str, body: Any, config: Mapping[str, Any]
) -> tuple[list[Report], list[Rejection]]:
    """Return the spoolable reports of an upload body and a rejection per malformed one."""
    listed = body.get("reports") if isinstance(body, dict) else None
    if not isinstance(listed, list) or not listed or set(body) != {"reports"}:
        raise ApiError(400, INVALID_BATCH, 'a batch must be a JSON object {"reports": [...]}')
    if len(listed) > int(config["MAX_REPORTS_PER_BATCH"]):
        raise too_many_reports(len(listed), int(config["MAX_REPORTS_PER_BATCH"]))
    reports, rejected = [], []
    retention = int(config["RETENTION"])
    latest = int(time.time()) + int(config["CLOCK_SKEW"])
    for obj in listed:
        raw = obj.get("report_id") if isinstance(obj, dict) else None
        shown = raw if isinstance(raw, str) and len(raw) <= 64 else None
        try:
            report_id, when = _envelope(obj)
        except DecodeError as error:
            rejected.append(Rejection(shown, INVALID_MESSAGE, str(error)))
            continue
        if when > latest:
            message = f"time {when} is in a future bucket; check the device clock"
            rejected.append(Rejection(shown, REPORT_TOO_EARLY, message))
            continue
        data = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()
        reports.append(Report(report_id, task_id, when, when + retention, data))
    return reports, rejected


def _envelope(obj: Any) -> tuple[bytes, int]:
    """Return a report's id and time (the shuffler reads nothing else of it)."""
    if not isinstance(obj, dict):
        raise DecodeError("a report must be a JSON object")
    raw_id = obj.get("report_id")
    if not isinstance(raw_id, str):
        raise DecodeError("report_id must be a string")
    report_id = b64decode(raw_id, REPORT_ID_BYTES, "report_id")
    when = obj.get("time")
    if not isinstance(when, int) or isinstance(when, bool) or when < 0:
        raise DecodeError("time must be a non-negative integer")
    return report_id, when


def app_from_environment() -> Flask:
    """Return the app configured by ``LDP_SHUFFLER_*`` variables (JSON values)."""
    prefix = "LDP_SHUFFLER_"
    given = {k[len(prefix) :]: v for k, v in os.environ.items() if k.startswith(prefix)}
    return create_app({key: json.loads(value) for key, value in given.items()})
