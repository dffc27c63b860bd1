"""Helpers for the client SDK tests: small tasks, fast settings and a scriptable fake collector.

The fake collector is a real HTTP server on a free 127.0.0.1 port (``http.server`` in a
thread). It answers like the aggregator by delegating to an :class:`InMemoryTransport`,
unless a test scripted the next answers: a status (with headers), a hang (accept the
request and never answer), or closing the connection. Like the aggregator it can refuse
an upload with 413 when its body (after gzip) passes ``max_body`` bytes or it holds more
than ``max_reports`` reports. It records every request.
"""

from __future__ import annotations

import gzip
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from ldp_telemetry.client import (
    Client,
    InMemoryTransport,
    Request,
    Response,
    RetryPolicy,
    Timeouts,
    TransportError,
)
from ldp_telemetry.client.privacy_ledger import Charge
from ldp_telemetry.shared import TaskConfig

FAST_TIMEOUTS = Timeouts(connect=0.5, read=0.5, config=0.5)
FAST_RETRY = RetryPolicy(max_retries=3, backoff=0.05, backoff_max=0.2, jitter=0.01, deadline=3.0)
MIB = 1 << 20
FREE = Charge(0.0, 0, None)  # a report of a task without a permanent layer, at ε = 0


def make_tasks() -> dict[str, TaskConfig]:
    """Return one small task per mechanism."""
    return {
        "rr": TaskConfig.create(task_id="t-rr", mechanism="rr", epsilon=1.0),
        "grr": TaskConfig.create(
            task_id="t-grr", mechanism="grr", epsilon=2.0, domain=("red", "green", "blue")
        ),
        "cms": TaskConfig.create(task_id="t-cms", mechanism="cms", epsilon=4.0, k=16, m=64),
        "hcms": TaskConfig.create(task_id="t-hcms", mechanism="hcms", epsilon=4.0, k=16, m=64),
    }


class DownTransport:
    """A collector that cannot be reached: reports stay queued."""

    def handle(self, request: Request, *, timeout: float) -> Response:
        raise TransportError("connection refused")

    def close(self) -> None:
        pass


def offline_client(data_dir: Path, tasks: dict[str, TaskConfig], **options: object) -> Client:
    """Return a client on ``data_dir`` whose collector cannot be reached (nothing is sent)."""
    return Client(
        "memory://test",
        transport=DownTransport(),
        data_dir=data_dir,
        tasks=list(tasks.values()),
        reports_per_period=None,
        atexit_timeout=None,
        flush_interval=60.0,
        **options,
    )


@dataclass
class Seen:
    """One request the fake collector received (body decompressed)."""

    method: str
    path: str
    headers: dict[str, str]
    raw_body: bytes
    time: float

    @property
    def body(self) -> bytes:
        """Return the body, gunzipped if it was sent compressed."""
        if self.headers.get("content-encoding") == "gzip":
            return gzip.decompress(self.raw_body)
        return self.raw_body

    def report_ids(self) -> list[str]:
        """Return the report ids of an upload."""
        return [r["report_id"] for r in json.loads(self.body)["reports"]]


@dataclass
class FakeCollector:
    """A loopback HTTP server answering like the aggregator, with scripted failures."""

    backend: InMemoryTransport
    url: str = ""
    script: list[tuple[str, int, dict[str, str]]] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    failing: int = 0  # while not 0, every upload is answered with this status
    max_body: int = 0  # when not 0, a larger upload body (uncompressed) is answered 413
    max_reports: int = 0  # when not 0, an upload with more reports is answered 413

    def then(self, action: str, status: int = 0, **headers: str) -> FakeCollector:
        """Script the next upload's answer: ("status", code) / ("hang",) / ("close",)."""
        self.script.append((action, status, {k.replace("_", "-"): v for k, v in headers.items()}))
        return self

    def uploads(self) -> list[Seen]:
        """Return the upload requests received, oldest first."""
        with self.lock:
            return [s for s in self.seen if s.method == "POST"]


def _handler(collector: FakeCollector) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # keep test output clean
            pass

        def do_GET(self) -> None:
            self._answer()

        def do_POST(self) -> None:
            self._answer()

        def _answer(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {k.lower(): v for k, v in self.headers.items()}
            with collector.lock:
                collector.seen.append(
                    Seen(self.command, self.path, headers, body, time.monotonic())
                )
                seen = collector.seen
                action = (
                    collector.script.pop(0) if self.command == "POST" and collector.script else None
                )
                if action is None and self.command == "POST" and collector.failing:
                    action = ("status", collector.failing, {})
                if action is None and self.command == "POST" and _too_large(collector, seen[-1]):
                    action = ("status", 413, {})
            if action is not None and action[0] == "hang":
                collector.release.wait(30)
                self.close_connection = True
                return
            if action is not None and action[0] == "close":
                self.close_connection = True
                return
            if action is not None:
                self._send(action[1], action[2], b'{"type":"urn:ldp-telemetry:problem:x"}')
                return
            answer = collector.backend.handle(
                Request(self.command, self.path, headers, body), timeout=1
            )
            self._send(answer.status, dict(answer.headers), answer.body)

        def _send(self, status: int, headers: dict[str, str], body: bytes) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


def _too_large(collector: FakeCollector, upload: Seen) -> bool:
    if collector.max_body and len(upload.body) > collector.max_body:
        return True
    return bool(collector.max_reports) and len(upload.report_ids()) > collector.max_reports


def start_collector(tasks: dict[str, TaskConfig]) -> tuple[FakeCollector, ThreadingHTTPServer]:
    """Start a fake collector serving ``tasks`` in a daemon thread."""
    fake = FakeCollector(InMemoryTransport(tasks.values()))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    server.daemon_threads = True
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    return fake, server
