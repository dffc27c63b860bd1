"""Serve a WSGI app through granian's RSGI interface, with a deadline on the request body.

granian's own WSGI interface reads the body from the app's thread: a client that sends
its headers and then dribbles the body holds that thread (measured: 40 such clients stop a
2-worker collector). Here the body is read on the worker's event loop, where waiting costs
nothing, within ``BODY_TIMEOUT`` seconds and ``max_body + 1`` bytes; only a complete body
is handed to the WSGI app. A body over the limit is cut at ``max_body + 1`` bytes (or, its
declared length over the limit, not read at all) so the app answers its own 413 (the
core's one document, ldp_telemetry.aggregator.core.problems.too_large); a late one is answered 408.
While more than ``BODY_WAIT_SLOTS`` requests of a worker wait for their bodies, a
newcomer's body gets ``CROWDED_BODY_TIMEOUT``: hundreds of connections that send headers
and never a body cannot hold the worker.

Uploads (``POST /v1/tasks/<task_id>/reports``) of the collector take a fast path: the
bridge runs :class:`ldp_telemetry.aggregator.core.intake.Intake` itself, without Flask's per-request
machinery, and awaits the group commit on the loop, so while one upload's transaction
runs the loop goes on reading and checking others, which join the next transaction. The
answers are byte for byte those of the Flask view: both run the core's one upload sequence
(``Intake.upload_async`` here, ``Intake.upload`` there) and its one exception table.
Every other request of the collector (estimates, heavy hitters, the dashboard, /metrics,
admin) runs on a pool of ``serving.APP_THREADS`` threads, never on the loop: an analyst's
query never stands between the loop and the next upload.

A client that closes its connection mid-body, or is gone before its answer, is its own
problem: counted in ``ldp_http_aborted_total``, answered 400 if anything can still be
sent, never logged as an error.

The environ carries no client address (REMOTE_ADDR): the collector never sees it.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from granian.rsgi import ProtocolClosed, ProtocolError

from ldp_telemetry.aggregator import serving
from ldp_telemetry.aggregator.core.intake import ROUTE, Headers, Intake
from ldp_telemetry.aggregator.core.metrics import ABORTED, observe_request
from ldp_telemetry.aggregator.core.problems import Parts
from ldp_telemetry.shared.contract import (
    INCOMPLETE_BODY,
    PROBLEM_MEDIA_TYPE,
    PROTOCOL_HEADER,
    REQUEST_TIMEOUT,
    UPLOAD_PATH,
    pattern,
    problem,
)

WsgiApp = serving.WsgiApp
BODY_TIMEOUT = 10.0  # s, from the end of the headers to the last body byte
# While this many requests of a worker wait for their bodies, a newcomer's body must come
# within CROWDED_BODY_TIMEOUT: a device sends its body with its headers (it is ready), so
# only connections that hold a request open without a body pay for the crowding.
BODY_WAIT_SLOTS = 64
CROWDED_BODY_TIMEOUT = 1.0  # s
TIMEOUT_BODY = json.dumps(
    problem(408, REQUEST_TIMEOUT, "the request body did not arrive in time; send it again")
).encode()
INCOMPLETE_BODY_ANSWER = json.dumps(
    problem(400, INCOMPLETE_BODY, "the connection ended before the request body did")
).encode()
PROBLEM_CLOSE = [("content-type", PROBLEM_MEDIA_TYPE), ("connection", "close")]
ABORT_REASONS = ("body_timeout", "closed_mid_body", "gone_before_answer")
_NO_BODY = frozenset({"GET", "HEAD", "OPTIONS", "DELETE"})
# the upload path, its task id matched as Flask's <task_id> matches it: no slash
UPLOAD_PATTERN = pattern(UPLOAD_PATH)


class _Deadline:
    """Give up on the awaited body read when ``seconds`` have passed.

    The read (granian's future) is itself cancelled when the time is up, not the task
    awaiting it: one timer per body, and no task cancellation to tell apart from others.
    """

    def __init__(self, seconds: float) -> None:
        self.expired = False
        self.current: Any = None
        self.handle = asyncio.get_running_loop().call_later(seconds, self._expire)

    def _expire(self) -> None:
        self.expired = True
        if self.current is not None:
            self.current.cancel()

    async def read(self, awaitable: Any) -> Any:
        """Return what ``awaitable`` (a granian future) gives, or raise TimeoutError."""
        if self.expired:
            raise TimeoutError
        if not hasattr(awaitable, "cancel"):  # a coroutine (tests), not granian's future
            awaitable = asyncio.ensure_future(awaitable)
        self.current = awaitable
        try:
            return await awaitable
        except asyncio.CancelledError:
            if self.expired:
                raise TimeoutError from None
            raise
        finally:
            self.current = None

    def close(self) -> None:
        self.handle.cancel()


def yield_to_uploads() -> None:
    """Lower the calling thread's CPU priority by ``serving.APP_NICENESS`` (Linux: a thread's
    own nice value), so an analyst's query gives way to the loop and the writer whenever they
    want the same core; elsewhere, or if refused, the thread keeps its priority."""
    try:
        thread = threading.get_native_id()
        niceness = os.getpriority(os.PRIO_PROCESS, thread) + serving.APP_NICENESS
        os.setpriority(os.PRIO_PROCESS, thread, min(niceness, 19))
    except (AttributeError, OSError):  # no per-thread priority here: run as the loop does
        pass


class RsgiBridge:
    """An RSGI application that runs ``app`` (WSGI) once the request body is complete."""

    def __init__(
        self,
        app: WsgiApp,
        max_body: int,
        threads: int = serving.APP_THREADS,
        intake: Intake | None = None,
    ) -> None:
        self.app = app
        self.max_body = max_body
        self.pool = (
            ThreadPoolExecutor(threads, thread_name_prefix="wsgi", initializer=yield_to_uploads)
            if threads
            else None
        )
        self.intake = intake  # the collector's uploads (None: every request goes to the app)
        self.waiting = 0  # requests awaiting their bodies (the loop's only thread counts)
        # Every series exists from the start: no metrics file grows on a fault's first hit.
        self.aborted = {reason: ABORTED.labels(reason) for reason in ABORT_REASONS}
        # called once the worker's event loop runs (granian_conf: a check that its server lives)
        self.serving: Callable[[], None] | None = None

    def __rsgi_init__(self, loop: Any) -> None:
        if self.serving is not None:  # granian calls this before it runs the loop
            loop.call_soon(self.serving)

    async def __rsgi__(self, scope: Any, protocol: Any) -> None:
        if scope.proto != "http":
            return
        started = time.perf_counter()
        declared = scope.headers.get("content-length")
        too_large = declared is not None and declared.isdigit() and int(declared) > self.max_body
        if too_large:
            body = b""  # not read at all: the upload sequence or Flask refuses it with 413
        elif declared == "0" or (declared is None and scope.method in _NO_BODY):
            body = b""
        else:
            read = await self._body(protocol, declared)
            if read is None:
                return  # answered already, or the client is gone
            body = read
        if self.intake is not None and scope.method == "POST":
            upload = UPLOAD_PATTERN.fullmatch(scope.path)
            if upload is not None:  # a declared length over the limit: the core refuses it
                length = int(declared) if declared is not None and declared.isdigit() else None
                status, headers, payload = await self._upload(upload.group(1), scope, body, length)
                self._respond(protocol, status, headers, payload)
                observe_request(ROUTE, "POST", status, time.perf_counter() - started)
                return
        environ = _environ(scope, body, declared if not body and declared else None)
        if self.pool is None:
            status, headers, payload = self._call(environ)
        else:
            loop = asyncio.get_running_loop()
            status, headers, payload = await loop.run_in_executor(self.pool, self._call, environ)
        self._respond(protocol, status, headers, payload)

    async def _body(self, protocol: Any, declared: str | None) -> bytes | None:
        """Return the request body, or answer (408, 400) and return None if it never came."""
        crowded = self.waiting >= BODY_WAIT_SLOTS
        self.waiting += 1
        deadline = _Deadline(CROWDED_BODY_TIMEOUT if crowded else BODY_TIMEOUT)
        try:
            # Content-Length (bounded above): one read in Rust; else capped chunks
            if declared is not None:
                body: bytes = await deadline.read(protocol())
            else:
                body = await self._read(protocol, deadline)
            return body
        except TimeoutError:
            self.aborted["body_timeout"].inc()
            self._respond(protocol, 408, PROBLEM_CLOSE, TIMEOUT_BODY)
        except (ProtocolClosed, ProtocolError):  # the client closed or broke its connection
            self.aborted["closed_mid_body"].inc()
            self._respond(protocol, 400, PROBLEM_CLOSE, INCOMPLETE_BODY_ANSWER)
        finally:
            deadline.close()
            self.waiting -= 1
        return None

    def _respond(
        self, protocol: Any, status: int, headers: list[tuple[str, str]], payload: bytes
    ) -> None:
        """Send an answer, unless the client is gone (then count it: nothing to log)."""
        try:
            protocol.response_bytes(status, headers, payload)
        except (ProtocolClosed, ProtocolError):
            self.aborted["gone_before_answer"].inc()

    async def _upload(self, task_id: str, scope: Any, body: bytes, declared: int | None) -> Parts:
        """The upload endpoint without Flask: check on the loop, await the group commit."""
        assert self.intake is not None
        headers = scope.headers
        return await self.intake.upload_async(
            task_id,
            Headers(
                headers.get("content-type"),
                headers.get("content-encoding"),
                headers.get("authorization"),
                headers.get(PROTOCOL_HEADER.lower()),
                declared,
            ),
            body,
            time.time(),
        )

    def __rsgi_del__(self, loop: Any) -> None:
        if self.intake is not None:
            self.intake.committer.close()
        if self.pool is not None:
            self.pool.shutdown(wait=True)

    async def _read(self, protocol: Any, deadline: _Deadline) -> bytes:
        chunks, size = [], 0
        stream = protocol.__aiter__()
        while True:
            try:
                chunk = await deadline.read(stream.__anext__())
            except StopAsyncIteration:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > self.max_body:  # enough for the app to answer 413; stop reading
                break
        return b"".join(chunks)[: self.max_body + 1]

    def _call(self, environ: dict[str, Any]) -> tuple[int, list[tuple[str, str]], bytes]:
        started: list[Any] = []

        def start_response(
            status: str, headers: list[tuple[str, str]], exc_info: Any = None
        ) -> Callable[[bytes], None]:
            started[:] = [int(status.split(" ", 1)[0]), headers]
            return _no_write

        result = self.app(environ, start_response)
        try:
            payload = b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        return started[0], started[1], payload


def _no_write(data: bytes) -> None:
    raise RuntimeError("the write() callable of start_response is not supported")


def _environ(scope: Any, body: bytes, declared: str | None) -> dict[str, Any]:
    host, _, port = scope.server.rpartition(":")
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope.method,
        "SCRIPT_NAME": "",
        # WSGI strings are latin-1 "bytes as str"; RSGI gives the decoded path
        "PATH_INFO": scope.path.encode("utf-8").decode("latin-1"),
        "QUERY_STRING": scope.query_string,
        "SERVER_NAME": host,
        "SERVER_PORT": port,
        "SERVER_PROTOCOL": f"HTTP/{scope.http_version}",
        # the whole body is here, however it was framed (or, too large, none of it)
        "CONTENT_LENGTH": declared or str(len(body)),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.scheme,
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    for name, value in scope.headers.items():
        if name == "content-type":
            environ["CONTENT_TYPE"] = value
        elif name not in ("content-length", "transfer-encoding"):
            key = "HTTP_" + name.upper().replace("-", "_")
            environ[key] = f"{environ[key]},{value}" if key in environ else value
    return environ


def import_app(target: str) -> Any:
    """Return the object ``module:attribute`` names (attribute ``app`` when omitted)."""
    from importlib import import_module

    module, _, attribute = target.partition(":")
    return getattr(import_module(module), attribute or "app")


def load(target: str) -> RsgiBridge:
    """Import ``module:attribute`` and wrap it; granian's target loader.

    A :class:`~ldp_telemetry.aggregator.serving.Served` says how: the collector's carries its
    :class:`~ldp_telemetry.aggregator.core.intake.Intake` (its uploads take the fast path), the
    shuffler's its threads (its requests commit to a spool and may ask the collector, which
    must not stall the loop reading bodies). A bare WSGI app (the benchmark's no-op) runs on
    the event loop.
    """
    served = import_app(target)
    if isinstance(served, serving.Served):
        return RsgiBridge(served.app, served.max_body, served.threads, served.intake)
    return RsgiBridge(served, serving.DEFAULT_MAX_BODY, threads=0)
