"""A sealed task over HTTP: the real SDK → the shuffler → the collector, in real processes.

The shuffler's spool holds only ciphertext (no payload field, on disk or in its WAL), the
collector counts every device's report exactly once, and a ciphertext replayed under
another report id or sealed to a key the collector does not hold is refused, each with its
reason, in the collector's verdict on the shuffled batch.
"""

from __future__ import annotations

import json
import signal
import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from ldp_telemetry.shared import TaskConfig
from ldp_telemetry.shared.wire import b64encode
from tests.shuffler.processes import device, health, shuffler_token, start_shuffler, wait_for
from tests.support.reports import create_task, estimates, post_reports
from tests.support.servers import Server, start_sealing_server

pytestmark = pytest.mark.timeout(180)
DEVICES, PER_DEVICE = 12, 40
VALUES = [f"value-{i}" for i in range(PER_DEVICE)]  # the SDK sends one report per value


@pytest.fixture
def sealing_collector(tmp_path: Path) -> Iterator[Server]:
    """Yield a real collector holding a seal key made by the CLI; killed after the test."""
    server = start_sealing_server(tmp_path / "collector.sqlite3")
    yield server
    server.kill()


def test_sealed_reports_through_the_shuffler(sealing_collector: Server, tmp_path: Path) -> None:
    create_task(
        sealing_collector.url,
        task_id="sealed",
        mechanism="grr",
        epsilon=2.0,
        domain=VALUES,
        min_batch_size=10,
        sealed=True,
    )
    token, spool = shuffler_token(Path(str(sealing_collector.db))), tmp_path / "spool.sqlite3"
    shuffler = start_shuffler(
        sealing_collector.url, token, spool, batch_min=1000
    )  # 13 uploads: holds all
    try:
        with ThreadPoolExecutor(max_workers=6) as pool:
            sent = sum(
                pool.map(lambda i: device(shuffler.url, "sealed", VALUES, i), range(DEVICES))
            )
        assert sent == DEVICES * PER_DEVICE
        _attack(shuffler.url)
        assert health(shuffler)["waiting"] == sent + 2
        _only_ciphertext_in(spool, sent + 2)
        shuffler.kill(signal.SIGKILL)
        shuffler = start_shuffler(sealing_collector.url, token, spool, batch_min=1)
        wait_for(lambda: health(shuffler)["waiting"] == 0, 90)
        wait_for(lambda: health(shuffler).get("reports", 0) == sent + 2, 30)
        counters = health(shuffler)
    finally:
        shuffler.kill(signal.SIGKILL)
    assert counters["accepted"] == sent
    assert counters["rejected:sealed_invalid"] == 1
    assert counters["rejected:unknown_seal_key"] == 1
    answer = estimates(sealing_collector.url, "sealed")
    assert answer.status_code == 200, answer.text
    assert answer.json()["n"] == sent  # every device's report once, nothing else


def _attack(shuffler_url: str) -> None:
    """Upload, as one device, a ciphertext moved to a fresh report id and one sealed to a
    key the collector never issued (the shuffler cannot tell: it takes both)."""
    task = TaskConfig.from_dict(
        {
            k: v
            for k, v in requests.get(f"{shuffler_url}/v1/tasks/sealed", timeout=10).json().items()
        }
    )
    assert task.sealed and task.seal is not None
    from ldp_telemetry.shared.codec import Envelope, encode_report, new_report_id

    report = encode_report(
        task, Envelope(new_report_id(), task.fingerprint, task.floor_time(_now()), 3)
    )
    moved = {**report, "report_id": b64encode(new_report_id())}
    foreign = {
        **encode_report(task, Envelope(new_report_id(), task.fingerprint, report["time"], 3))
    }
    foreign["key_id"] = "never-issued"
    body = json.dumps({"reports": [moved, foreign]}).encode()
    answer = post_reports(shuffler_url, "sealed", body)
    assert answer.status_code == 202 and answer.json()["accepted"] == 2, answer.text


def _only_ciphertext_in(spool: Path, expected: int) -> None:
    """Every spooled report is an envelope and a ciphertext; no payload field is on disk."""
    with sqlite3.connect(spool) as conn:
        bodies = [json.loads(b) for (b,) in conn.execute("SELECT body FROM bodies")]
    assert len(bodies) == expected
    assert all(set(b) == {"report_id", "fingerprint", "time", "key_id", "sealed"} for b in bodies)
    for path in spool.parent.iterdir():
        if path.name.startswith(spool.name):
            assert b'"index"' not in path.read_bytes(), path


def _now() -> float:
    import time

    return time.time()
