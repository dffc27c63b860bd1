"""The ledger and the upload queue in one SQLite file, so both survive a restart.

``<data_dir>/queue.sqlite3`` in WAL mode holds ``memo`` (the current period's reports
per task, looked up by HMAC key, see :mod:`client.budget`) and ``outbox`` (encoded
reports not yet delivered, oldest first). :meth:`SqliteStorage.admit` runs in one
``BEGIN IMMEDIATE`` transaction, so several threads or processes sharing a data_dir
respect one budget. Past ``max_queue`` reports or ``max_bytes`` bytes the oldest reports
are deleted and counted as ``quota_exceeded``. Commits are not fsynced
(``synchronous=NORMAL``): a power loss may forget the last reports, never corrupt the
file. Checkpoints (which do fsync) run in :meth:`SqliteStorage.maintain` on the uploader
thread; only a burst that grows the log past ``WAL_PAGES`` makes ``record`` checkpoint.
Only privatized, encoded reports are written.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from client.storage import Admission, DropCounter, Pending

FILE_NAME = "queue.sqlite3"
BUSY_TIMEOUT_MS = 250  # how long a record may wait for another process's transaction
WAL_PAGES = 2048  # ~8 MB of write-ahead log at most before record() checkpoints itself
_SCHEMA = """
CREATE TABLE IF NOT EXISTS memo (
    fingerprint TEXT NOT NULL, period INTEGER NOT NULL, lookup BLOB NOT NULL,
    task_id TEXT NOT NULL, report_id TEXT NOT NULL, report TEXT NOT NULL,
    PRIMARY KEY (fingerprint, period, lookup)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS spent (
    fingerprint TEXT NOT NULL, period INTEGER NOT NULL, count INTEGER NOT NULL,
    PRIMARY KEY (fingerprint, period)) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS memo_added AFTER INSERT ON memo BEGIN
    INSERT INTO spent VALUES (NEW.fingerprint, NEW.period, 1)
    ON CONFLICT DO UPDATE SET count = count + 1; END;
CREATE TRIGGER IF NOT EXISTS memo_removed AFTER DELETE ON memo BEGIN
    UPDATE spent SET count = count - 1
    WHERE fingerprint = OLD.fingerprint AND period = OLD.period; END;
CREATE TABLE IF NOT EXISTS outbox (
    seq INTEGER PRIMARY KEY, report_id TEXT NOT NULL UNIQUE,
    task_id TEXT NOT NULL, report TEXT NOT NULL, size INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS totals (
    id INTEGER PRIMARY KEY CHECK (id = 1), count INTEGER NOT NULL, bytes INTEGER NOT NULL);
INSERT OR IGNORE INTO totals VALUES (1, 0, 0);
CREATE TRIGGER IF NOT EXISTS outbox_added AFTER INSERT ON outbox BEGIN
    UPDATE totals SET count = count + 1, bytes = bytes + NEW.size; END;
CREATE TRIGGER IF NOT EXISTS outbox_removed AFTER DELETE ON outbox BEGIN
    UPDATE totals SET count = count - 1, bytes = bytes - OLD.size; END;
"""
_abandoned: list[sqlite3.Connection] = []  # a forked child's inherited connections


class SqliteStorage:
    """The ledger and a quota-bounded queue in ``<data_dir>/queue.sqlite3``."""

    def __init__(self, data_dir: Path, *, max_queue: int, max_bytes: int,
                 on_drop: DropCounter) -> None:
        self.path = data_dir / FILE_NAME
        self._max_queue, self._max_bytes = max_queue, max_bytes
        self._on_drop = on_drop
        self._lock = threading.Lock()
        self._db = self._connect()

    def _connect(self) -> sqlite3.Connection:
        self._pid = os.getpid()
        self._local = threading.local()  # the uploader thread's checkpoint connection
        self._extra: list[sqlite3.Connection] = []
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                             check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        # A checkpoint fsyncs: maintain() does it from the uploader thread, so record() on
        # the caller's thread normally only appends to the WAL. A long burst of records can
        # outrun those checkpoints; past WAL_PAGES the caller checkpoints too, bounding it.
        db.execute(f"PRAGMA wal_autocheckpoint={WAL_PAGES}")
        db.execute(f"PRAGMA journal_size_limit={WAL_PAGES * 4096}")
        db.executescript(_SCHEMA)
        os.chmod(self.path, 0o600)
        return db

    def admit(self, fingerprint: str, period: int, lookup: bytes, limit: int | None,
              make: Callable[[], Pending]) -> Admission:
        """Queue the period's report for ``lookup``, or a new one from ``make()`` if allowed."""
        with self._transaction() as db:
            row = db.execute("SELECT task_id, report_id, report FROM memo WHERE fingerprint = ? "
                             "AND period = ? AND lookup = ?",
                             (fingerprint, period, lookup)).fetchone()
            if row is not None:
                self._enqueue(db, Pending(*row))
                return Admission.REUSED
            spent = db.execute("SELECT count FROM spent WHERE fingerprint = ? AND period = ?",
                               (fingerprint, period)).fetchone()
            if limit is not None and spent is not None and spent[0] >= limit:
                return Admission.EXHAUSTED
            pending = make()
            if spent is None:  # a new period: the older ones' memo is no longer needed
                db.execute("DELETE FROM memo WHERE fingerprint = ? AND period < ?",
                           (fingerprint, period))
                db.execute("DELETE FROM spent WHERE fingerprint = ? AND period < ?",
                           (fingerprint, period))
            db.execute("INSERT INTO memo VALUES (?, ?, ?, ?, ?, ?)",
                       (fingerprint, period, lookup, pending.task_id, pending.report_id,
                        pending.report))
            self._enqueue(db, pending)
            return Admission.NEW

    def peek(self, limit: int) -> list[Pending]:
        """Return up to ``limit`` of the oldest queued reports, all of one task."""
        with self._transaction(write=False) as db:
            first = db.execute("SELECT task_id FROM outbox ORDER BY seq LIMIT 1").fetchone()
            if first is None:
                return []
            rows = db.execute("SELECT task_id, report_id, report FROM outbox WHERE task_id = ? "
                              "ORDER BY seq LIMIT ?", (first[0], limit)).fetchall()
        return [Pending(*row) for row in rows]

    def remove(self, report_ids: Iterable[str]) -> None:
        """Forget delivered (or definitively refused) reports."""
        with self._transaction() as db:
            db.executemany("DELETE FROM outbox WHERE report_id = ?",
                           [(report_id,) for report_id in report_ids])

    def count(self) -> int:
        """Return how many reports are queued."""
        self._check_fork()
        with self._lock:  # one statement needs no transaction
            return int(self._db.execute("SELECT count FROM totals").fetchone()[0])

    def clear(self) -> int:
        """Drop every queued report (the ledger stays); return how many there were."""
        with self._transaction() as db:
            return db.execute("DELETE FROM outbox").rowcount

    def maintain(self) -> None:
        """Copy the WAL into the database file, on a connection of the calling thread.

        PASSIVE: it never waits for, nor blocks, a record writing at the same time.
        """
        self._check_fork()
        db = getattr(self._local, "db", None)
        if db is None:
            db = self._local.db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000,
                                                  isolation_level=None, check_same_thread=False)
            self._extra.append(db)
        db.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def after_fork(self) -> None:
        """Open a fresh connection: SQLite connections must not cross a fork."""
        self._lock = threading.Lock()
        _abandoned.append(self._db)  # closing it here could disturb the parent's locks
        _abandoned.extend(self._extra)
        self._db = self._connect()

    def close(self) -> None:
        """Close the connections; idempotent."""
        with self._lock:
            for db in [self._db, *self._extra]:
                db.close()

    def _enqueue(self, db: sqlite3.Connection, pending: Pending) -> None:
        db.execute("INSERT OR IGNORE INTO outbox (report_id, task_id, report, size) "
                   "VALUES (?, ?, ?, ?)",
                   (pending.report_id, pending.task_id, pending.report, pending.size))
        count, size = db.execute("SELECT count, bytes FROM totals").fetchone()
        dropped = 0
        while count > self._max_queue or size > self._max_bytes:
            rows = db.execute("SELECT seq, size FROM outbox ORDER BY seq LIMIT 64").fetchall()
            for seq, row_size in rows:
                if count <= self._max_queue and size <= self._max_bytes:
                    break
                db.execute("DELETE FROM outbox WHERE seq = ?", (seq,))
                count, size, dropped = count - 1, size - row_size, dropped + 1
            if not rows:
                break
        self._on_drop("quota_exceeded", dropped)

    def _transaction(self, write: bool = True) -> _Transaction:
        self._check_fork()
        return _Transaction(self._db, self._lock, write)

    def _check_fork(self) -> None:
        if os.getpid() != self._pid:
            self.after_fork()


class _Transaction:
    """``with``: hold the lock, BEGIN (IMMEDIATE for writes), COMMIT or ROLLBACK."""

    def __init__(self, db: sqlite3.Connection, lock: threading.Lock, write: bool) -> None:
        self._db, self._lock, self._write = db, lock, write

    def __enter__(self) -> sqlite3.Connection:
        self._lock.acquire()
        try:
            self._db.execute("BEGIN IMMEDIATE" if self._write else "BEGIN")
        except BaseException:
            self._lock.release()
            raise
        return self._db

    def __exit__(self, kind: object, error: object, traceback: object) -> None:
        try:
            self._db.execute("COMMIT" if kind is None else "ROLLBACK")
        finally:
            self._lock.release()
