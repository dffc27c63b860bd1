"""WAL checkpoints off the upload path: commits never checkpoint, the checkpointer thread does.

Checked on real SQLite files by what the database file holds without its WAL (a copy of the
file alone: what a checkpoint has copied into it), and by a writer lock held from the test.
"""

from __future__ import annotations

import shutil
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from ldp_telemetry.aggregator.store.sqlite import backend, faults
from ldp_telemetry.aggregator.store.sqlite.backend import SqliteStore
from ldp_telemetry.aggregator.store.sqlite.checkpoint import Checkpointer, checkpoint
from ldp_telemetry.aggregator.store.sqlite.lock import WriterLock
from tests.support.waiting import WAIT, wait_until


def wal_database(path: Path, rows: int = 200) -> sqlite3.Connection:
    """A WAL database holding ``rows`` committed rows, none of them checkpointed; keep the
    connection open (closing the last one checkpoints the WAL)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute("CREATE TABLE t (x BLOB)")
    for _ in range(rows):
        conn.execute("INSERT INTO t VALUES (randomblob(2000))")
    return conn


TORN = -1  # in_file of a copy taken while a checkpoint was writing the file


def in_file(path: Path, table: str = "t") -> int:
    """Return the rows of ``table`` in the database file alone (its WAL left out), or TORN
    when the copy caught a checkpoint mid-write (pages of two states: "malformed")."""
    copy = path.with_name(f"copy-{time.monotonic_ns()}")
    shutil.copyfile(path, copy)
    conn = sqlite3.connect(copy)
    try:
        try:
            ((rows,),) = conn.execute(f"SELECT count(*) FROM {table}").fetchall()
        except sqlite3.OperationalError:  # the table itself is still only in the WAL
            return 0
        except sqlite3.DatabaseError:  # CI run of ea7d1b3: polled while the first pass copied
            return TORN
        return int(rows)
    finally:
        conn.close()


def test_a_commit_of_the_store_does_not_checkpoint_its_thread_does(tmp_path: Path) -> None:
    store = SqliteStore(str(tmp_path / "db.sqlite3"))
    store.initialize()
    store._checkpointer.restart_frames = 1  # every checkpoint also restarts the WAL
    store._checkpointer.idle = 0.2  # its thread ends soon after the last commit
    with store._write() as tx:
        assert tx.execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)
        tx.execute("CREATE TABLE filler (x BLOB)")
    for _ in range(50):
        with store._write() as tx:
            tx.execute("INSERT INTO filler VALUES (randomblob(4000))")
    wal = tmp_path / "db.sqlite3-wal"
    wait_until(lambda: in_file(tmp_path / "db.sqlite3", "filler") == 50, "not checkpointed")
    # the rows can reach the file before the checkpoint that copies them has ended (and
    # marked the WAL copied): a write then appends; once the thread has ended, none runs
    wait_until(lambda: store._checkpointer._thread is None, "the checkpointer did not end")
    size = wal.stat().st_size
    with store._write() as tx:  # the WAL is wholly in the database: this restarts it
        tx.execute("INSERT INTO filler VALUES (randomblob(4000))")
    assert wal.stat().st_size == size  # written from its beginning again, not appended to


def test_the_second_pass_waits_for_the_writers_lock(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    data = wal_database(path)
    assert in_file(path) == 0  # all in the WAL so far
    writer, ran = WriterLock(str(path)), threading.Event()

    def run() -> None:
        conn = sqlite3.connect(path, isolation_level=None)
        checkpoint(conn, WriterLock(str(path)), restart_frames=1)
        conn.close()
        ran.set()

    with writer.held():  # a writer of the node holds the lock
        thread = threading.Thread(target=run)
        thread.start()
        wait_until(lambda: in_file(path) == 200, "the first pass did not copy")
        assert not ran.wait(0.3)  # the second pass waits for the writer
    assert ran.wait(WAIT)
    thread.join(WAIT)
    data.close()


def test_below_restart_frames_no_lock_is_taken(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    data = wal_database(path)
    assert in_file(path) == 0  # all in the WAL so far
    writer = WriterLock(str(path))
    with writer.held():  # would block a second pass for ever
        conn = sqlite3.connect(path, isolation_level=None)
        checkpoint(conn, WriterLock(str(path)), restart_frames=1 << 30)
        conn.close()
    assert in_file(path) == 200  # copied all the same
    data.close()


def test_the_thread_ends_when_idle_and_a_commit_starts_another(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    data = wal_database(path)
    assert in_file(path) == 0  # all in the WAL so far
    opened: list[sqlite3.Connection] = []

    def connect() -> sqlite3.Connection:
        opened.append(sqlite3.connect(path, isolation_level=None, check_same_thread=False))
        return opened[-1]

    checkpointer = Checkpointer(connect, WriterLock(str(path)), interval=0.01, idle=0.1)
    checkpointer.poke()
    wait_until(lambda: checkpointer.checkpoints == 1, "no checkpoint ran")
    wait_until(lambda: checkpointer._thread is None, "the idle thread did not end")
    data.execute("INSERT INTO t VALUES (randomblob(2000))")
    checkpointer.poke()
    wait_until(lambda: checkpointer.checkpoints == 2, "no thread after the next commit")
    assert len(opened) == 2  # the ended thread closed its connection; the new one opened one
    assert in_file(path) == 201
    data.close()


def test_a_failing_checkpoint_is_tried_again_on_a_new_connection(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    data = wal_database(path)
    assert in_file(path) == 0  # all in the WAL so far
    attempts: list[int] = []

    def connect() -> sqlite3.Connection:
        attempts.append(1)
        if len(attempts) == 1:
            raise sqlite3.OperationalError("unable to open database file")
        return sqlite3.connect(path, isolation_level=None, check_same_thread=False)

    checkpointer = Checkpointer(connect, WriterLock(str(path)), interval=0.01, idle=WAIT)
    checkpointer.poke()
    wait_until(lambda: len(attempts) == 1, "no attempt")
    checkpointer.poke()
    wait_until(lambda: checkpointer.checkpoints == 1, "not tried again")
    assert in_file(path) == 200
    data.close()


def test_a_reader_pinning_the_wal_holds_no_commit_below_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # issue 41's 1.6 s upload: past 64 MiB every 64th commit truncated the WAL, and waited
    # (the node's write lock held) for the analyst's estimate under way to end its read
    path = tmp_path / "db.sqlite3"
    store = SqliteStore(str(path), busy_timeout=2.0)
    store.initialize()
    monkeypatch.setattr(faults, "WAL_LIMIT", 1 << 20)  # the size the WAL passes below (6 MB)
    # no checkpoint runs: a reader that begins on a WAL wholly copied would not pin it
    monkeypatch.setattr(store._checkpointer, "poke", lambda: None)
    with store._write() as tx:
        tx.execute("CREATE TABLE t (x BLOB)")
        tx.executemany("INSERT INTO t VALUES (randomblob(2000))", [()] * 3000)
    monkeypatch.setattr(backend, "CHECK_EVERY", 1)  # look at the WAL's size after every commit
    reader = sqlite3.connect(path, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM t").fetchall()  # its snapshot pins the WAL
    started = time.monotonic()
    with store._write() as tx:
        tx.execute("INSERT INTO t VALUES (randomblob(2000))")
    assert time.monotonic() - started < 1.0  # it waited 2 s (busy_timeout) for the reader
    wal = Path(f"{path}-wal")
    assert wal.stat().st_size > 1 << 22
    reader.execute("COMMIT")
    reader.close()
    monkeypatch.setattr(faults, "WAL_BOUND", 1 << 22)  # past the bound, it is truncated
    with store._write() as tx:
        tx.execute("INSERT INTO t VALUES (randomblob(2000))")
    assert wal.stat().st_size == 0
