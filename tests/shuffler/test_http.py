"""Devices → shuffler → collector over HTTP, with the real SDK and real processes.

Counted exactly (the collector's n is every report the devices had acknowledged), a resent
upload counted once, every batch drawn from ≥ batch_min uploads, nothing lost or forwarded
twice across a ``kill -9`` of the shuffler, and no device address or header in the
collector's database or log.
"""

from __future__ import annotations

import signal
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from ldp_telemetry.client.transport.http import USER_AGENT
from ldp_telemetry.shared import TaskConfig, encode_batch
from ldp_telemetry.shared.codec import Envelope, new_report_id
from tests.shuffler.processes import device, health, shuffler_token, start_shuffler, wait_for
from tests.support.reports import create_task, estimates
from tests.support.servers import Server
from tests.support.slow_clients import bodiless

pytestmark = pytest.mark.timeout(240)
DEVICES, PER_DEVICE, BATCH_MIN = 100, 200, 30  # 20,000 reports in 100 uploads
VALUES = [f"v{i}" for i in range(PER_DEVICE)]  # the SDK sends one report per value
MARKER = "device-marker-4f1c"  # a header value no report carries


def collector_rows(db: Path) -> tuple[list[tuple[int, int]], int]:
    """Return the recorded (size, reports) of every shuffled batch, and their report sum."""
    with sqlite3.connect(db) as conn:
        rows = [
            (int(s), int(r)) for s, r in conn.execute("SELECT size, reports FROM shuffled_batches")
        ]
    return rows, sum(r for _, r in rows)


def test_devices_through_the_shuffler(collector_process: Server, tmp_path: Path) -> None:
    db = Path(str(collector_process.db))
    create_task(
        collector_process.url,
        task_id="shuffled",
        mechanism="grr",
        epsilon=4.0,
        domain=VALUES,
        min_batch_size=10,
    )
    token = shuffler_token(db)
    spool = tmp_path / "spool.sqlite3"
    shuffler = start_shuffler(collector_process.url, token, spool, BATCH_MIN)
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            sent = sum(
                pool.map(lambda i: device(shuffler.url, "shuffled", VALUES, i), range(DEVICES))
            )
        assert sent == DEVICES * PER_DEVICE
        # The forwarder settles: every report forwarded or waiting, and what waits is fewer
        # than batch_min uploads' worth.
        wait_for(lambda: _settled(health(shuffler), sent), 120)
        forwarded = health(shuffler).get("reports", 0)
        # A device resends one upload (same ids): answered as replays, counted once.
        replay_ids = _resend_twice(shuffler.url, collector_process.url)
        before, _ = collector_rows(db)
        assert before and all(size >= BATCH_MIN for size, _ in before)
        # kill -9 the shuffler with acknowledged reports waiting ...
        assert health(shuffler)["waiting"] >= replay_ids
        shuffler.kill(signal.SIGKILL)
        shuffler = start_shuffler(collector_process.url, token, spool, batch_min=1)
        # ... and with batch_min 1 everything left is forwarded: nothing lost, nothing twice.
        wait_for(lambda: health(shuffler)["waiting"] == 0, 120)
        wait_for(lambda: collector_rows(db)[1] == sent + replay_ids, 60)
    finally:
        shuffler.kill(signal.SIGKILL)
    answer = estimates(collector_process.url, "shuffled")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["n"] == sent + replay_ids  # counted exactly, once each
    rows, admitted = collector_rows(db)
    assert admitted == body["n"]  # no report was forwarded in two batches
    assert sum(r for _, r in before) == forwarded  # the collector saw what the shuffler sent
    assert body["smallest_batch"] == min(size for size, _ in rows)
    assert 0 < body["central_epsilon"] <= body["effective_epsilon"]
    _no_device_trace(db, collector_process)


def _settled(counters: dict[str, int], sent: int) -> bool:
    waiting, forwarded = counters["waiting"], counters.get("reports", 0)
    return waiting + forwarded == sent and waiting < BATCH_MIN * PER_DEVICE


def _resend_twice(shuffler_url: str, collector_url: str) -> int:
    """POST one upload twice to the shuffler with identifying headers; return its size."""
    task = requests.get(f"{collector_url}/v1/tasks/shuffled", timeout=10).json()
    config = TaskConfig.from_dict({k: v for k, v in task.items() if k != "archive"})
    reports = [
        Envelope(new_report_id(), config.fingerprint, config.floor_time(_now()), 3)
        for _ in range(5)
    ]
    body = encode_batch(config, reports)
    headers = {"Content-Type": "application/json", "User-Agent": MARKER, "X-Device": MARKER}
    first = requests.post(
        f"{shuffler_url}/v1/tasks/shuffled/reports", data=body, headers=headers, timeout=30
    )
    again = requests.post(
        f"{shuffler_url}/v1/tasks/shuffled/reports", data=body, headers=headers, timeout=30
    )
    assert first.status_code == again.status_code == 202, again.text
    assert first.json() == {"accepted": 5, "rejected": []}
    assert again.json()["accepted"] == 0
    assert {r["reason"] for r in again.json()["rejected"]} == {"report_replayed"}
    return len(reports)


def _now() -> float:
    return time.time()


def _no_device_trace(db: Path, collector_process: Server) -> None:
    """The collector's files hold no address and none of the devices' header values."""
    files = [p for p in db.parent.iterdir() if p.name.startswith(db.name)]
    for path in files:
        data = path.read_bytes()
        assert b"127.0.0.1" not in data, path
        assert MARKER.encode() not in data, path
        assert USER_AGENT.encode() not in data, path
    log = db.with_suffix(".log").read_bytes()
    assert MARKER.encode() not in log


def test_clients_that_never_send_their_body_do_not_stop_the_shuffler(
    collector_process: Server, tmp_path: Path
) -> None:
    # Under gunicorn gthread, 20 such connections held its 8 threads: /healthz and uploads
    # waited over 15 s. Behind granian and the bridge, a waiting body costs an await.
    create_task(
        collector_process.url, task_id="crowd", mechanism="rr", epsilon=1.0, min_batch_size=1
    )
    token = shuffler_token(Path(str(collector_process.db)))
    shuffler = start_shuffler(collector_process.url, token, tmp_path / "crowd.sqlite3", 1000)
    head = (
        b"POST /v1/tasks/crowd/reports HTTP/1.1\r\nHost: x\r\n"
        b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
    )
    served = requests.get(f"{collector_process.url}/v1/tasks/crowd", timeout=10).json()
    task = TaskConfig.from_dict({k: v for k, v in served.items() if k != "archive"})
    slowest = 0.0
    try:
        with bodiless(shuffler.url, head, 100):
            time.sleep(1.0)
            for _ in range(10):
                started = time.monotonic()
                assert requests.get(f"{shuffler.url}/healthz", timeout=10).status_code == 200
                report = Envelope(
                    new_report_id(), task.fingerprint, task.floor_time(time.time()), 1
                )
                answer = requests.post(
                    f"{shuffler.url}/v1/tasks/crowd/reports",
                    data=encode_batch(task, [report]),
                    headers={"Content-Type": "application/json"},
                    timeout=10,
                )
                assert answer.status_code == 202, answer.text
                slowest = max(slowest, time.monotonic() - started)
                time.sleep(0.2)
    finally:
        shuffler.kill(signal.SIGKILL)
    assert slowest < 1.0, f"slowest health check + upload: {slowest:.2f} s"
