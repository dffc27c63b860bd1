"""No network I/O on the caller's thread, and an overall deadline on every network call,
against a server that drips its answer (2 bytes per second) — the worst a slow or hostile
network can do to socket timeouts, which bound each read but not a call."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ldp_telemetry.client import (
    Client,
    HTTPTransport,
    Request,
    RetryPolicy,
    Timeouts,
    TransportError,
)
from ldp_telemetry.shared import TaskConfig
from tests.support.fake_collector import FAST_RETRY

pytestmark = pytest.mark.timeout(60)
ANSWER = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n"
    + b"{"
    + b" " * 38
    + b"}"
)


@pytest.fixture
def dripping_url() -> Iterator[str]:
    """Yield a loopback URL whose server answers every request 2 bytes per second."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    stop = threading.Event()

    def drip(conn: socket.socket) -> None:
        with conn:
            conn.settimeout(0.5)
            try:
                conn.recv(65536)
                for i in range(0, len(ANSWER), 2):
                    if stop.wait(1.0):
                        return
                    conn.sendall(ANSWER[i : i + 2])
            except OSError:
                return

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            threading.Thread(target=drip, args=(conn,), daemon=True).start()

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    acceptor.join(5)
    listener.close()


def test_a_call_ends_at_its_deadline_however_slowly_the_server_answers(dripping_url: str) -> None:
    transport = HTTPTransport(
        dripping_url,
        timeouts=Timeouts(connect=5, read=5),
        retry=RetryPolicy(max_retries=0, deadline=10),
    )
    start = time.monotonic()
    with pytest.raises(TransportError, match="2 s deadline"):
        transport.handle(Request("GET", "/v1/tasks/t-rr", {}), timeout=2.0)
    assert time.monotonic() - start < 3.0  # the answer alone would take 60 s
    transport.close()


def test_the_first_record_of_an_unknown_task_does_not_wait(dripping_url: str) -> None:
    sdk = Client(
        dripping_url,
        atexit_timeout=None,
        retry=FAST_RETRY,
        timeouts=Timeouts(connect=1, read=5, config=2),
    )
    start = time.monotonic()
    assert sdk.record("t-rr", True) is False  # unknown yet: dropped, fetched in background
    assert time.monotonic() - start < 0.1
    assert sdk.stats().dropped == {"task_unavailable": 1}
    assert sdk.wait_for_tasks(["t-rr"], timeout=0.5) is False  # the server still drips
    start = time.monotonic()
    sdk.close(3.0)
    assert time.monotonic() - start < 4.0


@pytest.fixture
def slow_url() -> Iterator[str]:
    """Yield a loopback URL whose server accepts every upload after 1.5 s."""

    class Slow(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            time.sleep(1.5)
            body = json.dumps({"accepted": 1, "rejected": []}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_records_stay_fast_and_a_late_upload_after_close_logs_nothing(
    slow_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    task = TaskConfig.create(task_id="t-rr", mechanism="rr", epsilon=1.0)
    sdk = Client(
        slow_url,
        tasks=[task],
        atexit_timeout=None,
        reports_per_period=None,
        data_dir=tmp_path,
        retry=RetryPolicy(max_retries=0, deadline=5.0),
        batch_size=1,
    )
    durations = []
    for _ in range(200):
        start = time.monotonic()
        assert sdk.record("t-rr", True)
        durations.append(time.monotonic() - start)
    durations.sort()
    assert durations[int(0.99 * len(durations))] < 0.05  # generous: shared CI machine
    with caplog.at_level(logging.WARNING, logger="ldp_telemetry"):
        assert sdk.close(0.5) is False  # an upload is in flight; the queue stays on disk
        time.sleep(2.0)  # that upload is answered after close closed the queue
    assert "ProgrammingError" not in caplog.text and "upload failed" not in caplog.text
