"""The exit hook: a process that never calls close() still delivers, within a bound."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from ldp_telemetry.shared import TaskConfig
from tests.support.fake_collector import FakeCollector

pytestmark = pytest.mark.timeout(60)
SCRIPT = """
import json, sys
from ldp_telemetry.client import Client, RetryPolicy
from ldp_telemetry.shared import TaskConfig
task = TaskConfig.from_dict(json.loads(sys.argv[2]))
timeout = None if sys.argv[3] == "none" else float(sys.argv[3])
sdk = Client(sys.argv[1], tasks=[task], flush_interval=3600, atexit_timeout=timeout,
             retry=RetryPolicy(max_retries=100, backoff=0.5, deadline=60))
assert sdk.record(task.task_id, True)
"""  # ends without close(): only the exit hook can send the report


def run(url: str, task: TaskConfig, atexit_timeout: str) -> float:
    """Run the script; return how long the process took."""
    start = time.monotonic()
    subprocess.run(
        [sys.executable, "-c", SCRIPT, url, json.dumps(task.to_dict()), atexit_timeout],
        check=True,
        timeout=30,
    )
    return time.monotonic() - start


def test_exit_hook_flushes(fake_collector: FakeCollector, tasks: dict[str, TaskConfig]) -> None:
    run(fake_collector.url, tasks["rr"], "5")
    assert len(fake_collector.backend.reports("t-rr")) == 1


def test_exit_hook_can_be_turned_off(
    fake_collector: FakeCollector, tasks: dict[str, TaskConfig]
) -> None:
    run(fake_collector.url, tasks["rr"], "none")
    assert fake_collector.uploads() == []


def test_exit_hook_is_bounded_when_the_server_is_down(
    fake_collector: FakeCollector, tasks: dict[str, TaskConfig]
) -> None:
    fake_collector.failing = 503
    baseline = run(fake_collector.url, tasks["rr"], "none")
    assert run(fake_collector.url, tasks["rr"], "1") < baseline + 2.5
    assert fake_collector.uploads() and fake_collector.backend.reports("t-rr") == []
