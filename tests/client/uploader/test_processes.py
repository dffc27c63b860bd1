"""Several processes on one data_dir: each queued report is sent by one of them, exactly once.

Real processes (``os.fork``), one queue file, the fake collector: the uploads it received are
the ground truth. A report is claimed in the transaction that picks it
(``SqliteStorage.claim``), so two processes never send it both; a process killed holding a
claim leaves the report to the others once the claim's lease has passed.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from ldp_telemetry.client import Client, RetryPolicy
from ldp_telemetry.client.privacy_ledger import Limits
from ldp_telemetry.client.sqlite_storage import SqliteStorage
from ldp_telemetry.client.storage import Pending, Slot
from ldp_telemetry.client.uploader import exporter
from ldp_telemetry.shared import TaskConfig
from tests.client.uploader.test_fork import wait_for
from tests.support.fake_collector import (
    FAST_RETRY,
    FAST_TIMEOUTS,
    FREE,
    MIB,
    FakeCollector,
    offline_client,
)

pytestmark = [
    pytest.mark.timeout(90),
    pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork"),
]


def queue_reports(data_dir: Path, tasks: dict[str, TaskConfig], count: int) -> None:
    """Queue ``count`` reports of task t-cms in ``data_dir``, none sent."""
    offline = offline_client(data_dir, tasks)
    for i in range(count):
        assert offline.record("t-cms", f"value-{i}")
    assert offline.stats().queued == count
    assert offline.close(0.5) is False  # not delivered, kept on disk


def uploader(
    url: str,
    data_dir: Path,
    tasks: dict[str, TaskConfig],
    *,
    batch_size: int = 500,
    retry: RetryPolicy = FAST_RETRY,
) -> Client:
    return Client(
        url,
        data_dir=data_dir,
        timeouts=FAST_TIMEOUTS,
        retry=retry,
        batch_size=batch_size,
        atexit_timeout=None,
        flush_interval=60.0,
        tasks=list(tasks.values()),
    )


def sent_ids(fake_collector: FakeCollector) -> list[str]:
    return [report_id for seen in fake_collector.uploads() for report_id in seen.report_ids()]


def test_two_processes_drain_one_queue_and_send_each_report_once(
    fake_collector: FakeCollector, tasks: dict[str, TaskConfig], tmp_path: Path
) -> None:
    queue_reports(tmp_path, tasks, 200)
    start_read, start_write = os.pipe()
    children = []
    for n in range(2):
        pid = os.fork()
        if pid == 0:  # a child: drain the shared queue in batches of 10, report what it sent
            code = 3
            try:
                sdk = uploader(fake_collector.url, tmp_path, tasks, batch_size=10)
                os.read(start_read, 1)  # both start together
                code = 0 if sdk.flush(30) else 2
                (tmp_path / f"child-{n}.json").write_text(json.dumps(sdk.stats().sent))
                sdk.close(5)
            finally:
                os._exit(code)
        children.append(pid)
    os.write(start_write, b"go")
    assert [wait_for(pid, 60) for pid in children] == [0, 0]
    os.close(start_read)
    os.close(start_write)
    sent = sent_ids(fake_collector)
    assert len(sent) == 200 and len(set(sent)) == 200  # every report, each sent once
    assert len(fake_collector.backend.reports("t-cms")) == 200
    per_child = [json.loads((tmp_path / f"child-{n}.json").read_text()) for n in range(2)]
    assert sum(per_child) == 200  # a duplicate send would count twice (as report_replayed)


def test_a_killed_process_s_claimed_reports_are_sent_after_its_lease(
    fake_collector: FakeCollector,
    tasks: dict[str, TaskConfig],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(exporter, "LEASE_MARGIN", 0.5)  # a claim lasts deadline + 0.5 s
    retry = RetryPolicy(max_retries=0, deadline=3.0)  # the child's upload gives up after 3 s
    queue_reports(tmp_path, tasks, 5)
    fake_collector.then("hang")  # the child's upload arrives and is never answered
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            sdk = uploader(fake_collector.url, tmp_path, tasks, retry=retry)
            code = 0 if sdk.flush(30) else 2
        finally:
            os._exit(code)
    try:
        deadline = time.monotonic() + 20
        while not fake_collector.uploads() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert fake_collector.uploads(), "the child never uploaded"
    finally:
        os.kill(pid, signal.SIGKILL)  # mid-upload, holding its claim
        assert wait_for(pid, 10) == -signal.SIGKILL
    with sqlite3.connect(tmp_path / "queue.sqlite3") as db:
        held = db.execute("SELECT COUNT(*) FROM outbox WHERE claimed_until > ?", (time.time(),))
        assert held.fetchone()[0] == 5  # killed before its upload's deadline: the claim holds
    survivor = uploader(fake_collector.url, tmp_path, tasks, retry=retry)
    assert survivor.flush(0.5) is False  # the dead process's claim has not lapsed yet
    assert len(fake_collector.uploads()) == 1
    assert survivor.flush(10)  # it lapses 3.5 s after the claim: the survivor sends them
    sent = sent_ids(fake_collector)
    assert len(sent) == 10 and sorted(sent[:5]) == sorted(sent[5:])  # the hung upload, then ours
    assert len(fake_collector.backend.reports("t-cms")) == 5 and survivor.stats().sent == 5
    survivor.close(5)


def test_a_fork_while_a_thread_uses_the_queue_leaves_the_child_a_working_file(
    tmp_path: Path,
) -> None:
    # SQLite's lock state is per process: a child forked in the middle of another thread's
    # transaction used to find the file locked for good, or hang (fork_gate). A first record
    # may wait past BUSY_TIMEOUT_MS for the thread's writes: the second try must work.
    storage = SqliteStorage(tmp_path, max_queue=1000, max_bytes=MIB)
    for i in range(50):
        slot = Slot("t", 0, 1, i.to_bytes(2, "big"))
        storage.admit(slot, FREE, Limits(1000), lambda i=i: Pending("t", f"id-{i}", "x" * 300))
    stop = threading.Event()

    def churn() -> None:  # what the uploader thread does, without pause
        while not stop.is_set():
            storage.release(p.report_id for p in storage.claim(10, MIB, 60))
            storage.maintain()

    thread = threading.Thread(target=churn, daemon=True)
    thread.start()
    codes = []
    try:
        for n in range(25):
            pid = os.fork()
            if pid == 0:
                code = 3
                try:
                    made = Pending("t", f"child-{n}", "x")
                    slot = Slot("t", 0, 1, (1000 + n).to_bytes(2, "big"))
                    try:
                        storage.admit(slot, FREE, Limits(1000), lambda made=made: made)
                    except sqlite3.OperationalError:  # busy: the thread writes without pause
                        storage.admit(slot, FREE, Limits(1000), lambda made=made: made)
                    storage.release(p.report_id for p in storage.claim(5, MIB, 60))
                    code = 0
                finally:
                    os._exit(code)
            codes.append(wait_for(pid, 10))
    finally:
        stop.set()
        thread.join(10)
    assert codes == [0] * 25  # no child hung (-1) or found the file locked (3)
    assert storage.count() == 75
    storage.close()
