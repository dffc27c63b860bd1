"""A shuffler whose collector is slow, down or full, or whose own disk is full.

The shuffler app in process against a fake upstream (a loopback HTTP server) whose task
requests hang until released while its upload-key answers come at once: relays end within
``RELAY_TIMEOUT`` with 503 + Retry-After, at most ``BRIDGE_THREADS`` − 1 wait at once, and
an upload is answered meanwhile. A batch answered 507 (a full disk) is sent again no sooner
than the collector's Retry-After. A full spool disk answers 507 + Retry-After as the
collector's does, not 500.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from ldp_telemetry.shared import Envelope, TaskConfig, encode_batch
from ldp_telemetry.shared.codec import new_report_id
from ldp_telemetry.shuffler.app import create_app
from tests.support.servers import free_port

pytestmark = pytest.mark.timeout(60)
TASK = TaskConfig.create(task_id="slow", mechanism="rr", epsilon=1.0)


class Upstream(ThreadingHTTPServer):
    """A collector that answers upload-key requests and holds task requests until released."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.release = threading.Event()
        self.puts: list[float] = []  # when each batch arrived; the first is answered 507

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: Upstream

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if not self.path.endswith("/upload-key"):
            self.server.release.wait(30)  # a stopped collector: connected, never answering
        self._answer(200, {"upload_key_sha256": None})

    def do_PUT(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.server.puts.append(time.monotonic())
        if len(self.server.puts) == 1:
            self._answer(507, {"type": "urn:ldp-telemetry:problem:insufficient_storage"}, "2")
        else:
            self._answer(200, {"accepted": 1, "rejected": []})

    def _answer(self, status: int, body: dict[str, Any], retry_after: str | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        if retry_after is not None:
            self.send_header("Retry-After", retry_after)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    server = Upstream()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.release.set()
    server.shutdown()
    server.server_close()


def shuffler(upstream_url: str, tmp_path: Path, batch_min: int = 1000) -> Flask:
    config = {"SPOOL": str(tmp_path / "spool.sqlite3"), "UPSTREAM": upstream_url, "TOKEN": "t"}
    return create_app({**config, "BATCH_MIN": batch_min, "RELAY_TIMEOUT": 0.5})


def upload(app: Flask, reports: int = 1) -> Any:
    bucket = TASK.floor_time(time.time())
    batch = [Envelope(new_report_id(), TASK.fingerprint, bucket, 1) for _ in range(reports)]
    return app.test_client().post(
        "/v1/tasks/slow/reports",
        data=encode_batch(TASK, batch),
        headers={"Content-Type": "application/json", "LDP-Protocol": "1.0"},
    )


def test_relays_to_a_stopped_collector_are_bounded_and_leave_uploads_a_thread(
    upstream: Upstream, tmp_path: Path
) -> None:
    app = shuffler(upstream.url, tmp_path)
    started = threading.Barrier(4)

    def relay(_: int) -> tuple[int, str | None, float]:
        started.wait(5)
        begun = time.monotonic()
        answer = app.test_client().get("/v1/tasks/slow")
        return answer.status_code, answer.headers.get("Retry-After"), time.monotonic() - begun

    try:
        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(relay, range(4)))
            uploaded = upload(app)
        assert uploaded.status_code == 202, uploaded.get_json()
        # Three waited (the relay's slots) and gave up within the timeout, one retry
        # included; the fourth found no slot and was answered at once.
        assert all(status == 503 and after == "5" for status, after, _ in answers), answers
        waits = sorted(elapsed for _, _, elapsed in answers)
        assert waits[0] < 0.4 and 0.9 <= waits[-1] < 5, waits
    finally:
        app.extensions["ldp_shuffler_forwarder"].stop()


def test_a_collector_that_is_down_gets_task_requests_a_retry_after(tmp_path: Path) -> None:
    port = free_port()  # nothing listens here (this worker's: no other test's server either)
    app = shuffler(f"http://127.0.0.1:{port}", tmp_path)
    try:
        answer = app.test_client().get("/v1/tasks/slow")
        assert answer.status_code == 503
        assert answer.get_json()["type"].endswith(":upstream_unavailable")
        assert answer.headers["Retry-After"] == "5"
    finally:
        app.extensions["ldp_shuffler_forwarder"].stop()


def test_a_batch_refused_507_waits_for_the_retry_after(upstream: Upstream, tmp_path: Path) -> None:
    app = shuffler(upstream.url, tmp_path, batch_min=1)
    try:
        assert upload(app).status_code == 202
        deadline = time.monotonic() + 20
        while len(upstream.puts) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        first, second = upstream.puts[:2]
        assert second - first >= 2.0  # the forwarder's own pause would have been 0.5–1 s
    finally:
        app.extensions["ldp_shuffler_forwarder"].stop()


def test_a_full_spool_disk_answers_507_with_retry_after(upstream: Upstream, tmp_path: Path) -> None:
    app = shuffler(upstream.url, tmp_path)
    spool = app.extensions["ldp_shuffler_spool"]
    try:
        assert upload(app).status_code == 202
        # SQLite's page cap stands in for a full disk (SQLITE_FULL); the test client runs
        # the app on this thread, on this connection.
        conn = spool._connection()
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")
        refused = [upload(app, 500) for _ in range(3)]  # not left inside a failed transaction
        assert {answer.status_code for answer in refused} == {507}
        assert refused[0].headers["Retry-After"] == "60"
        assert refused[0].get_json()["type"].endswith(":insufficient_storage")
        conn.execute("PRAGMA max_page_count = 1073741823")
        assert upload(app).status_code == 202 and spool.pending == 2
    finally:
        app.extensions["ldp_shuffler_forwarder"].stop()
