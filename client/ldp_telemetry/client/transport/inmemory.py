"""An in-memory stand-in for the aggregator, for tests of applications that embed the SDK.

:class:`InMemoryTransport` answers the two requests the client makes, the way the aggregator does:
``GET /v1/tasks/{id}`` (with ETag / If-None-Match) and ``POST /v1/tasks/{id}/reports`` (gzip
allowed; reports decoded with :mod:`ldp_telemetry.shared.codec`, each report id counted once, a
repeat answered ``report_replayed``). It does not check time windows or upload keys. A sealed task's
reports are opened with ``keys`` (key id → X25519 private key, as the collector's key file holds
them). What arrived can be inspected
with :meth:`reports`, :meth:`sums` and :meth:`estimate`::

    transport = InMemoryTransport([task])
    client = Client("memory://", transport=transport, tasks=[task])
    client.record(task.task_id, True)
    client.flush()
    transport.estimate(task.task_id).rows()
"""

from __future__ import annotations

import gzip
import json
import threading
import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from ldp_telemetry.client.transport import Request, Response
from ldp_telemetry.shared.codec import Envelope, decode_batch, replays
from ldp_telemetry.shared.contract import (
    CACHE_CONTROL,
    INVALID_BATCH,
    NOT_FOUND,
    PROBLEM_MEDIA_TYPE,
    TASK_PATH,
    UNKNOWN_TASK,
    UPLOAD_PATH,
    pattern,
    problem,
    task_etag,
    upload_answer,
)
from ldp_telemetry.shared.errors import DecodeError
from ldp_telemetry.shared.estimates import Estimates
from ldp_telemetry.shared.sums import Sums
from ldp_telemetry.shared.task import TaskConfig

_TASK, _UPLOAD = pattern(TASK_PATH), pattern(UPLOAD_PATH)


class InMemoryTransport:
    """Serve tasks and collect reports in memory; thread-safe."""

    def __init__(
        self, tasks: Iterable[TaskConfig] = (), keys: Mapping[str, X25519PrivateKey] | None = None
    ) -> None:
        self._lock = threading.Lock()
        self._keys = dict(keys or {})
        self._tasks: dict[str, TaskConfig] = {}
        self._reports: dict[str, list[Envelope]] = {}
        self._seen: set[bytes] = set()
        self.requests: list[Request] = []  # every request received, oldest first
        for task in tasks:
            self.add_task(task)

    def add_task(self, task: TaskConfig) -> None:
        """Publish (or replace) a task."""
        with self._lock:
            self._tasks[task.task_id] = task
            self._reports.setdefault(task.task_id, [])

    def task_ids(self) -> list[str]:
        """Return the ids of the tasks it serves (e.g. for ``Client(task_ids=...)``)."""
        with self._lock:
            return list(self._tasks)

    def reports(self, task_id: str) -> list[Envelope]:
        """Return the reports accepted for a task, in arrival order."""
        with self._lock:
            return list(self._reports.get(task_id, []))

    def sums(self, task_id: str) -> Sums:
        """Return the task's accumulated sums over every accepted report."""
        mechanism = self._tasks[task_id].mechanism_object
        sums = mechanism.new_sums()
        sums.add_many(mechanism.stack([envelope.payload for envelope in self.reports(task_id)]))
        return sums

    def estimate(
        self, task_id: str, candidates: Sequence[Any] | None = None, level: float = 0.95
    ) -> Estimates:
        """Return the task's estimates (candidates None: the mechanism's default).

        A yes/no task estimates yes and no, a domain task its domain; a sketch task needs
        ``candidates``: without them ParameterError is raised.
        """
        mechanism = self._tasks[task_id].mechanism_object
        return mechanism.estimate(self.sums(task_id), candidates, level=level)

    def handle(self, request: Request, *, timeout: float) -> Response:
        """Answer one request as the aggregator would."""
        with self._lock:
            self.requests.append(request)
        task = _TASK.fullmatch(request.path)
        if task is not None and request.method == "GET":
            return self._task(task["task_id"], request)
        upload = _UPLOAD.fullmatch(request.path)
        if upload is not None and request.method == "POST":
            return self._upload(upload["task_id"], request)
        return _problem(404, NOT_FOUND, f"no route for {request.method} {request.path}")

    def close(self) -> None:
        """Do nothing: there is nothing to release."""

    def _task(self, task_id: str, request: Request) -> Response:
        task = self._tasks.get(task_id)
        if task is None:
            return _problem(404, UNKNOWN_TASK, f"there is no task {task_id!r}")
        etag = task_etag(task.fingerprint + (f".{task.seal.key_id}" if task.seal else ""))
        headers = {"etag": etag, "cache-control": CACHE_CONTROL}
        if request.header("If-None-Match") == etag:
            return Response(304, headers)
        return _json(200, task.to_dict(), headers)

    def _upload(self, task_id: str, request: Request) -> Response:
        task = self._tasks.get(task_id)
        if task is None:
            return _problem(404, UNKNOWN_TASK, f"there is no task {task_id!r}")
        try:
            accepted, rejected = decode_batch(task, _parse_body(request), self._keys)
        except DecodeError as error:
            return _problem(400, INVALID_BATCH, str(error))
        count = 0
        with self._lock:
            for envelope in accepted:
                if envelope.report_id in self._seen:
                    rejected += replays([envelope.report_id])
                    continue
                self._seen.add(envelope.report_id)
                self._reports[task_id].append(envelope)
                count += 1
        return _json(200, upload_answer(count, rejected))


def _parse_body(request: Request) -> Any:
    body = request.body or b""
    try:
        if (request.header("Content-Encoding") or "").lower() == "gzip":
            body = gzip.decompress(body)
        return json.loads(body)
    except (ValueError, OSError, EOFError, zlib.error):
        raise DecodeError("the body is not (gzip) JSON") from None


def _json(status: int, data: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(
        status, {"content-type": "application/json", **(headers or {})}, json.dumps(data).encode()
    )


def _problem(status: int, code: str, detail: str) -> Response:
    return Response(
        status,
        {"content-type": PROBLEM_MEDIA_TYPE},
        json.dumps(problem(status, code, detail)).encode(),
    )
