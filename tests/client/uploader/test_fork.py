"""Fork safety: a child process starts its own uploader and its reports arrive."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from ldp_telemetry.client import Client
from ldp_telemetry.shared import TaskConfig
from tests.support.fake_collector import FAST_RETRY, FAST_TIMEOUTS, FakeCollector

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork"),
]


def wait_for(pid: int, timeout: float) -> int:
    """Return the exit code of child ``pid``, killing it if it outlives ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return -1


@pytest.mark.parametrize("on_disk", [False, True])
def test_a_forked_child_records_and_its_reports_arrive(
    fake_collector: FakeCollector, tasks: dict[str, TaskConfig], tmp_path: Path, on_disk: bool
) -> None:
    sdk = Client(
        fake_collector.url,
        data_dir=tmp_path if on_disk else None,
        timeouts=FAST_TIMEOUTS,
        retry=FAST_RETRY,
        reports_per_period=None,
        atexit_timeout=None,
        flush_interval=60.0,
        task_ids=["t-cms"],
    )
    assert sdk.wait_for_tasks(timeout=10)
    assert sdk.record("t-cms", "parent-before-fork")
    assert sdk.flush(5)  # the parent's uploader thread is running now
    assert sdk.record("t-cms", "parent-queued")  # queued, not yet sent, when forking
    pid = os.fork()
    if pid == 0:  # the child: record, flush, and leave without running pytest's teardown
        code = 3
        try:
            code = 0 if sdk.record("t-cms", "child") and sdk.flush(5) else 2
        finally:
            os._exit(code)
    assert wait_for(pid, 20) == 0
    assert sdk.flush(5)
    reports = fake_collector.backend.reports("t-cms")
    assert len(reports) == 3  # before fork, the child's one, the parent's queued one
    sent = [report_id for seen in fake_collector.uploads() for report_id in seen.report_ids()]
    assert len(set(sent)) == 3
    assert len(sent) == 3  # one send per report: each is claimed by one process at a time
    if on_disk:  # one queue file: each queued report goes with whichever process claims it first
        assert sdk.stats().sent in (1, 2, 3)
    else:  # in memory the parent's queued report stays the parent's
        assert sdk.stats().sent == 2
    sdk.close(5)
