"""Helpers of the shuffler tests: a shuffler token, the shuffler as a subprocess, a device."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import requests

from ldp_telemetry.client import Client, Timeouts
from tests.support.servers import READY_WAIT, Server, free_port

PATIENT = Timeouts(connect=10, read=60, config=30)


def device(url: str, task_id: str, values: list[str], index: int) -> int:
    """Run one SDK device: record each value once (from ``index`` on, wrapping), upload
    them in one batch on close; return the reports it sent (asserted: all of them)."""
    sdk = Client(
        url,
        timeouts=PATIENT,
        task_ids=[task_id],
        reports_per_period=None,
        batch_size=len(values),
        atexit_timeout=None,
    )
    assert sdk.wait_for_tasks(timeout=30)
    for j in range(len(values)):
        assert sdk.record(task_id, values[(index + j) % len(values)])
    assert sdk.close(60)
    stats = sdk.stats()
    assert stats.sent == len(values), stats
    return int(stats.sent)


def shuffler_token(db: Path) -> str:
    """Create a shuffler token in the collector's database with the CLI; return it."""
    command = ["tokens", "create", "--role", "shuffler"]
    done = subprocess.run(
        [sys.executable, "-m", "ldp_telemetry.aggregator.cli", "--db", str(db), *command],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


def start_shuffler(
    upstream: str, token: str, spool: Path, batch_min: int, batch_max: int = 5000
) -> Server:
    """Start ``ldp-aggregator shuffler`` on a free loopback port; wait until it answers."""
    port = free_port()
    log_path = spool.with_suffix(f".{port}.log")
    command = [
        sys.executable,
        "-m",
        "ldp_telemetry.aggregator.cli",
        "shuffler",
        "--upstream",
        upstream,
        "--spool",
        str(spool),
        "--batch-min",
        str(batch_min),
        "--batch-max",
        str(batch_max),
        "--port",
        str(port),
    ]
    env = {**os.environ, "LDP_SHUFFLER_TOKEN": token, "PROMETHEUS_MULTIPROC_DIR": ""}
    log = open(log_path, "ab")  # noqa: SIM115  # closed with the process
    process = subprocess.Popen(command, env=env, stdout=log, stderr=log, start_new_session=True)
    log.close()
    server = Server(f"http://127.0.0.1:{port}", process, spool)
    deadline = time.monotonic() + READY_WAIT
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if requests.get(server.url + "/healthz", timeout=2).status_code == 200:
                return server
        except (requests.ConnectionError, requests.Timeout):  # not listening, or starting
            time.sleep(0.1)
    server.kill()
    raise RuntimeError(f"shuffler did not start: {log_path.read_text()[-3000:]}")


def health(server: Server) -> dict[str, int]:
    """Return the shuffler's counters (waiting, batches, reports, accepted, ...)."""
    answer = requests.get(server.url + "/healthz", timeout=10)
    assert answer.status_code == 200, answer.text
    return {k: v for k, v in answer.json().items() if isinstance(v, int)}


def wait_for(condition: object, timeout: float = 60.0) -> None:
    """Poll ``condition()`` until it is true; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError("condition not reached in time")
