"""The network transport: a ``requests`` session with urllib3's retry support.

Retries use :class:`urllib3.util.Retry` mounted on the session's adapter: connection
errors, read timeouts, 429 and 5xx are retried, POST included (uploads are idempotent:
every report has its id and a replay is recognised by the server), and a Retry-After
answer is honoured. Two things urllib3 does not do are added by subclassing its Retry:
waits happen on an event that :meth:`HTTPTransport.close` sets (so a shutdown is never
stuck in a backoff sleep), and no wait goes past the call's deadline: a Retry-After
longer than what is left of it ends the call with a :class:`TransportError` that carries
the wait, which the uploader then honours (a 507's 60 s, say). A retry resends the very
same body bytes.

Socket timeouts bound each read, not a call: a server that drips a byte a second never
trips them. So every call also has a watchdog: at its deadline the sockets the call is
using are shut down, which ends any read at once, and the call fails. No call, however
the server behaves, outlives its deadline by more than a moment.
"""

from __future__ import annotations

import contextlib
import os
import random
import socket
import threading
import time
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import HTTPError as Urllib3Error
from urllib3.util import Retry

from ldp_telemetry.client.errors import TransportError
from ldp_telemetry.client.settings import RetryPolicy, Timeouts
from ldp_telemetry.client.transport import Request, Response, retry_after

MAX_RESPONSE_BYTES = 1 << 20  # the API's answers are small; never buffer more than this
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504, 507})  # PROTOCOL §5: 507 included
USER_AGENT = "ldp-telemetry-client/0.1"


class _GiveUp(Exception):
    """Raised from a retry wait that would pass the deadline or was interrupted."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after  # the answer's Retry-After, when that was the wait


class _CallState(threading.local):
    """The deadline and retry count of the call running on this thread."""

    deadline = 0.0
    retries = 0
    interrupt: threading.Event | None = None
    connections: list[HTTPConnection] | None = None  # what the watchdog may cut


_call = _CallState()


def _watch(connection: HTTPConnection) -> None:
    """Note a connection the current call sends on (the watchdog cuts it at the deadline)."""
    if _call.connections is not None:
        _call.connections.append(connection)


class _WatchedHTTPConnection(HTTPConnection):
    def request(self, *args: Any, **kwargs: Any) -> None:
        _watch(self)
        super().request(*args, **kwargs)


class _WatchedHTTPSConnection(HTTPSConnection):
    def request(self, *args: Any, **kwargs: Any) -> None:
        _watch(self)
        super().request(*args, **kwargs)


class _WatchedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


def _cut(connections: list[HTTPConnection], expired: threading.Event) -> None:
    """The watchdog: shut the call's sockets down, which ends a blocked read now."""
    expired.set()
    for connection in list(connections):
        sock = getattr(connection, "sock", None)
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class DeadlineRetry(Retry):
    """urllib3's Retry, with interruptible, deadline-bounded, jittered waits."""

    def __init__(self, *args: Any, jitter: float = 0.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.jitter = jitter

    def new(self, **kw: Any) -> DeadlineRetry:
        """Return a copy with updated counters (keeps the jitter)."""
        retry = super().new(**kw)
        retry.jitter = self.jitter
        return retry

    def increment(self, *args: Any, **kwargs: Any) -> DeadlineRetry:
        """Count the retry urllib3 is about to make (raises when they are spent)."""
        retry = super().increment(*args, **kwargs)
        _call.retries += 1
        return retry

    def sleep(self, response: Any = None) -> None:
        """Wait the Retry-After time or the backoff, unless that passes the deadline."""
        delay = None
        if response is not None and self.respect_retry_after_header:
            try:
                delay = self.get_retry_after(response)
            except Urllib3Error:  # an unparsable Retry-After: fall back to backoff
                delay = None
        if delay is None:
            attempt = max(0, len(self.history) - 1)
            delay = min(self.backoff_max, self.backoff_factor * 2**attempt)
            delay += random.random() * self.jitter  # spreads clients retrying together
        if time.monotonic() + delay >= _call.deadline:
            asked = retry_after(response.headers.get("Retry-After")) if response else None
            if asked is not None:
                raise _GiveUp(f"the collector asked to retry in {asked:g} s (Retry-After)", asked)
            raise _GiveUp("the retry deadline would pass before the next attempt")
        if _call.interrupt is not None and _call.interrupt.wait(delay):
            raise _GiveUp("the transport was closed")


class HTTPTransport:
    """Send requests to ``endpoint`` with timeouts, bounded retries and keep-alive."""

    def __init__(
        self,
        endpoint: str,
        *,
        upload_key: str | None = None,
        timeouts: Timeouts | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.endpoint = endpoint.rstrip("/")
        self._upload_key = upload_key
        self._timeouts = timeouts or Timeouts()
        self._policy = retry or RetryPolicy()
        self._reset()

    def _reset(self) -> None:
        # Sessions are per thread; after a fork the child must not touch the parent's
        # sockets, so everything is rebuilt when the process id changes.
        self._pid = os.getpid()
        self._local = threading.local()
        self._lock = threading.Lock()
        self._sessions: list[requests.Session] = []
        self._closed = threading.Event()

    def handle(self, request: Request, *, timeout: float) -> Response:
        """Return the answer to ``request``; raise TransportError if there is none."""
        if os.getpid() != self._pid:
            self._reset()
        if self._closed.is_set():
            raise TransportError("the transport is closed")
        _call.deadline, _call.retries = time.monotonic() + timeout, 0
        _call.interrupt = self._closed
        connections: list[HTTPConnection] = []
        _call.connections = connections
        expired = threading.Event()
        watchdog = threading.Timer(timeout, _cut, (connections, expired))
        watchdog.daemon = True
        watchdog.start()
        try:
            return self._send(request, timeout)
        except (requests.RequestException, Urllib3Error, _GiveUp, OSError) as error:
            detail = str(error) if isinstance(error, _GiveUp) else type(error).__name__
            if expired.is_set():
                detail = f"no complete answer within the {timeout:g} s deadline"
            raise TransportError(
                f"{request.method} {request.path} failed: {detail}",
                retries=_call.retries,
                retry_after=error.retry_after if isinstance(error, _GiveUp) else None,
            ) from None
        finally:
            watchdog.cancel()
            _call.connections = None

    def close(self) -> None:
        """Interrupt retry waits and close every session; idempotent."""
        self._closed.set()
        with self._lock:
            sessions, self._sessions = self._sessions, []
        for session in sessions:
            session.close()

    def _send(self, request: Request, timeout: float) -> Response:
        headers = {"User-Agent": USER_AGENT, **request.headers}
        if self._upload_key and request.method == "POST":
            headers["Authorization"] = f"Bearer {self._upload_key}"
        per_attempt = (min(self._timeouts.connect, timeout), min(self._timeouts.read, timeout))
        answer = self._session().request(
            request.method,
            self.endpoint + request.path,
            data=request.body,
            headers=headers,
            timeout=per_attempt,
            stream=True,
            allow_redirects=False,
        )
        try:
            body = answer.raw.read(MAX_RESPONSE_BYTES, decode_content=True)
        finally:
            answer.close()
        return Response(
            answer.status_code,
            {k.lower(): v for k, v in answer.headers.items()},
            body,
            retries=_call.retries,
        )

    def _session(self) -> requests.Session:
        session: requests.Session | None = getattr(self._local, "session", None)
        if session is None:
            session = requests.Session()
            adapter = HTTPAdapter(max_retries=self._retry(), pool_maxsize=2)
            adapter.poolmanager.pool_classes_by_scheme = {
                "http": _WatchedHTTPPool,
                "https": _WatchedHTTPSPool,
            }
            session.mount("http://", adapter)
            session.mount("https://", adapter)
            self._local.session = session
            with self._lock:
                self._sessions.append(session)
        return session

    def _retry(self) -> DeadlineRetry:
        policy = self._policy
        return DeadlineRetry(
            total=policy.max_retries,
            connect=policy.max_retries,
            read=policy.max_retries,
            status=policy.max_retries,
            other=0,
            redirect=0,
            allowed_methods=frozenset({"GET", "POST"}),
            status_forcelist=RETRY_STATUSES,
            backoff_factor=policy.backoff,
            backoff_max=policy.backoff_max,
            jitter=policy.jitter,
            respect_retry_after_header=True,
            retry_after_max=policy.deadline,
            raise_on_status=False,
        )
