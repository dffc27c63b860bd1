"""The Java SDK survives a kill and never waits on the collector.

- A JVM killed (SIGKILL) with reports queued and uploads in flight, then started again on
  the same data folder: every report is counted exactly once by a real collector.
- A collector that accepts connections and never answers, or one that is not there:
  record() stays fast, and flush() returns when its timeout says.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sdk_java.helpers import driver_command, run_driver
from tests.support.reports import create_task_json, estimates_json
from tests.support.servers import free_port

pytestmark = [pytest.mark.timeout(600), pytest.mark.usefixtures("java_sdk")]
RECORDS = 1000


def test_a_killed_jvm_delivers_every_report_exactly_once(
    collector_url: str, tmp_path: Path
) -> None:
    create_task_json(
        collector_url,
        task_id="java-kill",
        mechanism="cms",
        epsilon=4.0,
        k=16,
        m=64,
        min_batch_size=1,
    )
    folder = tmp_path / "device"
    plan = {"mode": "kill-record", "endpoint": collector_url, "task": "java-kill", "count": RECORDS}
    path = tmp_path / "kill.json"
    path.write_text(json.dumps({**plan, "dir": str(folder)}))
    process = subprocess.Popen(driver_command(path), stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        recorded = json.loads(process.stdout.readline())
    finally:
        process.send_signal(signal.SIGKILL)  # uploads in flight, reports queued
        process.wait(timeout=30)
    assert recorded["recorded"] == RECORDS
    assert recorded["stats"]["queued"] > 0, recorded  # something was left for the restart
    again = run_driver({**plan, "mode": "restart", "dir": str(folder)}, tmp_path)
    assert again["flushed"] is True, again
    assert again["stats"]["queued"] == 0
    assert estimates_json(collector_url, "java-kill", candidates=["value-1"])["n"] == RECORDS


@pytest.fixture
def silent_collector() -> Iterator[str]:
    """Yield the URL of a server that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=5)
        for connection in held:
            connection.close()
        listener.close()


@pytest.mark.parametrize("kind", ["stalled", "dead"])
def test_record_never_waits_on_the_collector(
    kind: str, silent_collector: str, collector_url: str, tmp_path: Path
) -> None:
    served = create_task_json(
        collector_url, task_id=f"java-{kind}", mechanism="cms", epsilon=4.0, k=16, m=64
    )
    served.pop("upload_key", None)
    endpoint = silent_collector if kind == "stalled" else f"http://127.0.0.1:{free_port()}"
    plan = {
        "mode": "stall",
        "endpoint": endpoint,
        "task": served["task_id"],
        "task_json": json.dumps(served),
        "count": 2000,
    }
    path = tmp_path / "stall.json"
    path.write_text(json.dumps(plan))
    done = subprocess.run(
        driver_command(path), capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    recorded, flushed = (json.loads(line) for line in done.stdout.strip().splitlines()[-2:])
    assert recorded["queued"] == 2000
    # A record is a few microseconds; 200 ms allows a loaded machine's GC and JIT. The first
    # (apart) loads the SDK's classes with nothing queued yet (a two-worker CI run's worst was
    # 714 ms, a loaded JVM's warm-up; no upload holds the lock while it talks to the network).
    assert recorded["worst_ms"] < 200 and recorded["first_ms"] < 5000, recorded
    assert flushed["flushed"] is False
    assert flushed["flush_returned_ms"] < 3000, flushed
