"""data_dir: privatized reports survive a restart, quotas drop the oldest, kill switch clears."""

from __future__ import annotations

import sqlite3
import sys
import threading
import time
from pathlib import Path

import pytest

from ldp_telemetry.client import (
    Client,
    InMemoryTransport,
    sqlite_storage,
)
from ldp_telemetry.client.privacy_ledger import Limits
from ldp_telemetry.client.settings import MAX_REPORTS_PER_PERIOD
from ldp_telemetry.client.sqlite_storage import BUSY_TIMEOUT_MS, WAL_PAGES, SqliteStorage
from ldp_telemetry.client.storage import Admission, MemoryStorage, Pending, Slot
from ldp_telemetry.shared import TaskConfig
from tests.support.fake_collector import FREE, MIB, offline_client

pytestmark = pytest.mark.timeout(60)


def test_queued_reports_survive_a_restart(tasks: dict[str, TaskConfig], tmp_path: Path) -> None:
    offline = offline_client(tmp_path, tasks)
    for value in ("a", "b", "c"):
        assert offline.record("t-cms", value)
    assert offline.close(0.5) is False  # not delivered, but kept on disk
    assert offline.stats().dropped == {}
    transport = InMemoryTransport(tasks.values())
    online = Client("memory://test", transport=transport, data_dir=tmp_path, atexit_timeout=None)
    assert online.stats().queued == 3
    assert online.flush(5)
    assert len(transport.reports("t-cms")) == 3 and online.stats().sent == 3
    assert online.close(5)


def test_a_full_disk_queue_refuses_new_reports_and_counts_them(
    tasks: dict[str, TaskConfig], tmp_path: Path
) -> None:
    offline = offline_client(tmp_path, tasks, max_queue=3)
    assert [offline.record("t-cms", f"value-{i}") for i in range(5)] == [True] * 3 + [False] * 2
    stats = offline.stats()
    assert stats.queued == 3 and stats.dropped == {"queue_full": 2}
    offline.close(0.2)


def pending(i: int, size: int = 100) -> Pending:
    return Pending("task", f"id-{i}", "x" * size)


def ids(batch: list[Pending]) -> list[str]:
    return [p.report_id for p in batch]


def queue(storage: SqliteStorage, count: int) -> None:
    for i in range(count):
        slot = Slot("task", 0, 1, bytes([i]))
        assert storage.admit(slot, FREE, Limits(count), lambda i=i: pending(i))


def test_storage_claims_one_task_at_a_time_and_removes(tmp_path: Path) -> None:
    storage = SqliteStorage(tmp_path, max_queue=100, max_bytes=1 << 20)
    for i, task in enumerate(["a", "b", "a"]):
        storage.admit(
            Slot(task, 0, 1, bytes([i])),
            FREE,
            Limits(MAX_REPORTS_PER_PERIOD),
            lambda i=i, t=task: Pending(t, f"id{i}", "{}"),
        )
    assert ids(storage.claim(10, MIB, 60)) == ["id0", "id2"]
    assert ids(storage.claim(10, MIB, 60)) == ["id1"]  # task a's are claimed: task b's
    storage.release(["id1"])
    storage.remove(["id0", "id2"])
    assert ids(storage.claim(10, MIB, 60)) == ["id1"] and storage.count() == 1
    assert storage.clear() == 1 and storage.count() == 0
    storage.close()


def test_disabling_clears_the_queue_on_disk(tasks: dict[str, TaskConfig], tmp_path: Path) -> None:
    offline = offline_client(tmp_path, tasks)
    assert offline.record("t-rr", True) and offline.record("t-grr", "red")
    offline.close(0.2)
    disabled = offline_client(tmp_path, tasks, enabled=False)
    assert disabled.stats().dropped == {"disabled": 2}
    assert disabled.record("t-rr", True) is False
    disabled.close(0.2)
    again = offline_client(tmp_path, tasks)
    assert again.stats().queued == 0
    again.close(0.2)


def test_the_write_ahead_log_stays_bounded(tasks: dict[str, TaskConfig], tmp_path: Path) -> None:
    transport = InMemoryTransport(tasks.values())
    sdk = Client(
        "memory://test",
        transport=transport,
        data_dir=tmp_path,
        batch_size=100,
        reports_per_period=None,
        atexit_timeout=None,
        max_queue=100_000,
        task_ids=["t-cms"],
    )
    assert sdk.wait_for_tasks(timeout=10)
    for i in range(1500):  # ~30 KB of log each: 45 MB if nothing checkpointed
        assert sdk.record("t-cms", f"value-{i}")
    assert sdk.flush(10) and len(transport.reports("t-cms")) == 1500
    assert (tmp_path / "queue.sqlite3-wal").stat().st_size < (WAL_PAGES + 512) * 4096
    sdk.close(5)


def test_no_connection_of_the_queue_fsyncs_its_commits(tmp_path: Path) -> None:
    # The uploader thread's claims and removals committed with SQLite's default
    # synchronous=FULL: an fsync while holding the write lock, which a record (waiting at most
    # BUSY_TIMEOUT_MS) outlasted under disk pressure. Every connection is NORMAL (fsyncs only
    # in checkpoints, without the write lock) and checkpoints past WAL_PAGES alike.
    storage = SqliteStorage(tmp_path, max_queue=10, max_bytes=MIB)
    connections = [storage._db]
    uploader = threading.Thread(target=lambda: connections.append(storage._own_connection()))
    uploader.start()
    uploader.join()
    assert connections[1] is not storage._db  # the uploader thread's own connection
    for db in connections:
        assert db.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        assert db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == WAL_PAGES
        assert db.execute("PRAGMA journal_size_limit").fetchone()[0] == WAL_PAGES * 4096
    storage.close()


def test_a_failing_disk_is_counted_not_raised(tasks: dict[str, TaskConfig], tmp_path: Path) -> None:
    offline = offline_client(tmp_path, tasks)
    offline._storage.close()  # every statement now fails
    assert offline.record("t-rr", True) is False
    assert offline.stats().dropped == {"storage_error": 1} and offline.stats().queued == 0
    assert offline.flush(0.5) is False
    assert offline.close(0.5) is False


def test_a_queue_held_by_another_transaction_drops_the_record_in_bounded_time(
    tasks: dict[str, TaskConfig], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sdk = offline_client(tmp_path, tasks)
    other = sqlite3.connect(tmp_path / "queue.sqlite3", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holding the queue's write lock
    try:
        started = time.monotonic()
        assert sdk.record("t-rr", True) is False
        waited = time.monotonic() - started
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert BUSY_TIMEOUT_MS / 1000 <= waited < 5.0  # waits its busy timeout, then gives up
    assert sdk.stats().dropped == {"storage_error": 1}
    # the warning names SQLite's result code (no data): why the queue failed
    assert "OperationalError SQLITE_BUSY" in caplog.text or sys.version_info < (3, 11)
    assert sdk.record("t-rr", True) is True  # the lock gone, records are queued again
    sdk.close(0.5)


def test_a_ledger_of_the_old_schema_still_counts(tmp_path: Path) -> None:
    # Before the budget was kept per task id, memo/spent were keyed by fingerprint.
    old = sqlite3.connect(tmp_path / "queue.sqlite3")
    old.executescript("""
        CREATE TABLE memo (fingerprint TEXT NOT NULL, period INTEGER NOT NULL,
            lookup BLOB NOT NULL, task_id TEXT NOT NULL, report_id TEXT NOT NULL,
            report TEXT NOT NULL, PRIMARY KEY (fingerprint, period, lookup)) WITHOUT ROWID;
        CREATE TABLE spent (fingerprint TEXT NOT NULL, period INTEGER NOT NULL,
            count INTEGER NOT NULL, PRIMARY KEY (fingerprint, period)) WITHOUT ROWID;
        INSERT INTO memo VALUES ('fp', 86400, x'01', 'task', 'id-old', '{}');
        INSERT INTO spent VALUES ('fp', 86400, 1);""")
    old.close()
    storage = SqliteStorage(tmp_path, max_queue=10, max_bytes=MIB)
    day = Slot("task", 86400, 2 * 86400, b"\x02")
    assert storage.admit(day, FREE, Limits(1), lambda: pending(1)) is Admission.EXHAUSTED
    assert (
        storage.admit(Slot("task", 86400, 2 * 86400, b"\x01"), FREE, Limits(1), lambda: pending(2))
        is Admission.REUSED
    )
    assert ids(storage.claim(10, MIB, 60)) == ["id-old"]
    next_day = Slot("task", 2 * 86400, 3 * 86400, b"\x03")
    assert storage.admit(next_day, FREE, Limits(1), lambda: pending(3)) is Admission.NEW
    storage.close()
    SqliteStorage(tmp_path, max_queue=10, max_bytes=MIB).close()


def test_a_claim_bounds_a_batch_by_bytes(tmp_path: Path) -> None:
    storages = [
        MemoryStorage(max_queue=100, max_bytes=MIB),
        SqliteStorage(tmp_path, max_queue=100, max_bytes=MIB),
    ]
    for storage in storages:
        for i, size in enumerate([300, 300, 300, 2000]):
            storage.admit(
                Slot("task", 0, 1, bytes([i])),
                FREE,
                Limits(MAX_REPORTS_PER_PERIOD),
                lambda i=i, s=size: pending(i, s),
            )
        assert ids(storage.claim(10, 1000, 60)) == ["id-0", "id-1", "id-2"]
        storage.release(["id-0", "id-1", "id-2"])
        assert ids(storage.claim(2, 1000, 60)) == ["id-0", "id-1"]
        storage.release(["id-0", "id-1"])
        assert ids(storage.claim(10, 600, 60)) == ["id-0"]  # 2 x 301 > 600
        storage.remove(["id-0", "id-1", "id-2"])
        assert ids(storage.claim(10, 1000, 60)) == ["id-3"]  # alone, too big
        storage.close()


def test_two_storages_on_one_file_never_claim_the_same_report(tmp_path: Path) -> None:
    first = SqliteStorage(tmp_path, max_queue=10, max_bytes=MIB)
    second = SqliteStorage(tmp_path, max_queue=10, max_bytes=MIB)  # as another process would
    queue(first, 4)
    assert ids(first.claim(2, MIB, 60)) == ["id-0", "id-1"]
    assert ids(second.claim(10, MIB, 60)) == ["id-2", "id-3"]
    second.release(["id-0", "id-1", "id-2"])  # only its own claims: id-2
    assert ids(first.claim(10, MIB, 60)) == ["id-2"]
    # A clock set back an hour: claims seem to start in the future; they are void, not held
    # for an hour more. (The same as moving the claims forward by an hour.)
    with sqlite3.connect(tmp_path / "queue.sqlite3") as db:
        db.execute("UPDATE outbox SET claimed_at = claimed_at + 3600, claimed_until = 1e12")
    assert ids(second.claim(10, MIB, 60)) == ["id-0", "id-1", "id-2", "id-3"]
    first.close()
    second.close()


def test_a_queue_of_the_schema_before_claims_gains_them(tmp_path: Path) -> None:
    old = sqlite3.connect(tmp_path / "queue.sqlite3")
    old.executescript(sqlite_storage._TABLES.replace(", {claims}", ""))  # the schema before
    old.execute("INSERT INTO outbox (report_id, task_id, report, size) VALUES ('old', 't', '', 0)")
    old.commit()
    old.close()
    storages = [SqliteStorage(tmp_path, max_queue=10, max_bytes=MIB) for _ in range(2)]
    assert storages[0].count() == 1
    assert ids(storages[0].claim(10, MIB, 60)) == ["old"] and storages[1].claim(10, MIB, 60) == []
    for storage in storages:
        storage.close()
