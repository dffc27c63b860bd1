"""The embedded store: one SQLite file in WAL mode, safe for several worker processes.

Sums are kept per (task, bucket, slice, row) as the row's report count ``n`` and its counters as a
BLOB of little-endian integers (:mod:`~ldp_telemetry.aggregator.store.counters`), in rowid tables
(migration 0010). An upload is one ``BEGIN IMMEDIATE`` transaction (the database's single writer
lock): check and record the ids, stage the new reports packed
(:mod:`ldp_telemetry.aggregator.store.staging`), and, once a task's staged bytes pass
``staged_bytes``, fold them into the rows they touch (read, add, write back), then commit. Workers
therefore serialize their read-modify-writes and any number of them give the same sums as one. The
view answers only after ``COMMIT`` returns. Reads add what is staged in memory, from their own
snapshot (:mod:`ldp_telemetry.aggregator.store.staged_view`): an analyst never takes the write lock.
What both stores do alike lives in :mod:`ldp_telemetry.aggregator.store.base`; here are SQLite's own
connections, transactions, id claims, folds and backup.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

from ldp_telemetry.aggregator.core.faults import classify_sqlite
from ldp_telemetry.aggregator.core.metrics import STORE_LOCK_WAIT
from ldp_telemetry.aggregator.store.base import SqlStore
from ldp_telemetry.aggregator.store.interface import StoreFull
from ldp_telemetry.aggregator.store.sql import CHUNK, Tx, fold_into_sums, marks
from ldp_telemetry.aggregator.store.sqlite.checkpoint import Checkpointer
from ldp_telemetry.aggregator.store.sqlite.faults import (
    CHECK_EVERY,
    WAL_LIMIT,
    FileIdentity,
    bound_wal,
)
from ldp_telemetry.aggregator.store.sqlite.lock import WriterLock
from ldp_telemetry.aggregator.store.sqlite.migrations import SCHEMA
from ldp_telemetry.shared import TaskConfig

# /readyz is ready only with this much free space beside the database: an upload group
# and the WAL frames of its fold need room a one-row probe does not
READY_FREE = 1 << 20
# rows of one INSERT of ids: 3 parameters each, under the 999 of SQLite before 3.32
IDS_PER_INSERT = 333


class SqliteStore(SqlStore):
    """:class:`~ldp_telemetry.aggregator.store.interface.Store` on one SQLite file (a connection per
    thread)."""

    schema = SCHEMA
    duplicate = sqlite3.IntegrityError

    def __init__(
        self,
        path: str,
        *,
        synchronous: str = "NORMAL",
        busy_timeout: float = 30.0,
        staged_bytes: int = 8 << 20,
    ) -> None:
        if synchronous.upper() not in ("NORMAL", "FULL", "EXTRA"):
            raise ValueError(
                f"SQLITE_SYNCHRONOUS must be NORMAL, FULL or EXTRA, got {synchronous!r}"
            )
        super().__init__(staged_bytes=staged_bytes)
        self.path, self.synchronous, self.busy_timeout = path, synchronous.upper(), busy_timeout
        self._local = threading.local()
        self._identity = FileIdentity(path)
        self._writer = WriterLock(path)
        self._checkpointer = Checkpointer(self._open_checkpointer, self._writer)

    # -- connections and transactions --------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        # One connection per thread and per process: a connection must not cross a fork.
        conn = getattr(self._local, "conn", None)
        if conn is None or self._local.pid != os.getpid():
            conn = self._open()
            # In WAL mode NORMAL writes every commit to the WAL file before COMMIT returns
            # (no fsync): a killed process (kill -9) loses nothing, a power cut may lose the
            # last commits. FULL also fsyncs each commit.
            conn.execute(f"PRAGMA synchronous={self.synchronous}")
            conn.execute(f"PRAGMA journal_size_limit={WAL_LIMIT}")
            # no checkpoint inside a COMMIT: the checkpointer thread does it (checkpoint.py)
            conn.execute("PRAGMA wal_autocheckpoint=0")
            self._local.conn, self._local.pid, self._local.commits = conn, os.getpid(), 0
        return conn

    def _open_checkpointer(self) -> sqlite3.Connection:
        """The checkpointer's connection: its syncs are those of the store's ``synchronous``."""
        self._identity.check()
        conn = self._open()
        conn.execute(f"PRAGMA synchronous={self.synchronous}")
        conn.execute("PRAGMA wal_autocheckpoint=0")
        return conn

    def _open(self) -> sqlite3.Connection:
        """Connect to the database file. Once the store has opened it, never create it: a
        file moved away mid-serving must not be replaced by an empty one that this thread
        would go on using after the right file is back (no such table: a 500 for ever)."""
        mode = "rw" if self._identity.expected is not None else "rwc"
        uri = f"file:{quote(os.path.abspath(self.path))}?mode={mode}"
        try:
            return sqlite3.connect(uri, uri=True, timeout=self.busy_timeout, isolation_level=None)
        except sqlite3.Error as error:  # e.g. the file is gone: 503, retry later
            fault = classify_sqlite(error)
            if fault is None:
                raise
            raise fault from error

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; SQLite's disk and file faults become retryable errors."""
        waited = time.perf_counter()
        with self._writer.held():
            yield from self._transaction(waited)

    def _transaction(self, waited: float) -> Iterator[sqlite3.Connection]:
        conn = self._connection()
        self._identity.check()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as error:  # still locked after busy_timeout, or a file fault
            fault = classify_sqlite(error)
            if fault is None:
                raise
            raise fault from error
        STORE_LOCK_WAIT.observe(time.perf_counter() - waited)
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException as error:
            if conn.in_transaction:  # a failed COMMIT may have rolled back already
                with contextlib.suppress(sqlite3.Error):  # never mask the original error
                    conn.execute("ROLLBACK")
            fault = classify_sqlite(error) if isinstance(error, sqlite3.Error) else None
            if fault is not None:
                raise fault from error
            raise
        self._checkpointer.poke()
        self._local.commits += 1
        if self._local.commits % CHECK_EVERY == 0:
            bound_wal(conn, self.path)

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """One WAL snapshot (writers go on); inside this thread's transaction, that one."""
        conn = self._connection()
        if conn.in_transaction:  # e.g. a task looked up while an upload is staged
            yield conn
            return
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    def _stream(self, sql: str, parameters: Sequence[Any]) -> Iterator[Any]:
        conn = self._open()  # its own connection: the statement's own snapshot
        try:
            yield from conn.execute(sql, parameters)
        finally:
            conn.close()

    def initialize(self) -> None:
        """Switch the file to WAL mode and bring its schema up to date (idempotent)."""
        conn = self._connection()
        conn.execute("PRAGMA journal_mode=WAL")  # persistent: stored in the file
        self._identity.remember()
        super().initialize()

    # -- ingest: ids, staging, folds ---------------------------------------------------

    def _claim(self, tx: Tx, task_id: str, first: dict[bytes, int]) -> set[bytes]:
        """Return the ids known before; insert the others (the write lock is held).

        Replays are rare, so the ids are inserted at once (one ``INSERT OR IGNORE`` of many
        rows: one statement, one release of the GIL, where ``executemany`` stepped once per
        id) and no ``SELECT`` goes before: the unique index's lookup is the insert's own.
        Only if some id was ignored are the known ones read back: a new row's rowid is the
        largest one + 1 (SQLite picks at random only past 2**63 - 1, which appending ids
        cannot reach), so this claim's rows are the last ``inserted`` rowids and any other
        row holding one of its ids is older. The store alone (groups of 4 uploads): 0.91x
        the CPU per 1-report upload, 0.86x per 10-report upload.
        """
        rows = [(task_id, i, x) for i, x in first.items()]
        inserted = 0
        for start in range(0, len(rows), IDS_PER_INSERT):
            chunk = rows[start : start + IDS_PER_INSERT]
            inserted += tx.execute(
                f"INSERT OR IGNORE INTO seen VALUES {','.join(['(?, ?, ?)'] * len(chunk))}",
                [value for row in chunk for value in row],
            ).rowcount
        if inserted == len(first):
            return set()
        if inserted == 0:
            return set(first)
        ((newest,),) = tx.execute("SELECT last_insert_rowid()")
        ids, known = list(first), set[bytes]()
        for start in range(0, len(ids), CHUNK):
            part = ids[start : start + CHUNK]
            known.update(
                report_id
                for report_id, rowid in tx.execute(
                    f"SELECT report_id, rowid FROM seen WHERE task_id = ? AND report_id IN "
                    f"({marks(len(part))})",
                    (task_id, *part),
                )
                if rowid <= newest - inserted
            )
        return known

    def _after_stage(self, tx: Tx, task: TaskConfig, added: int) -> None:
        """Fold the task's staged reports once they pass its ``fold_threshold`` (in this
        upload)."""
        ((staged,),) = tx.execute(
            "INSERT INTO staged_size VALUES (?, ?) ON CONFLICT (task_id) DO UPDATE "
            "SET bytes = bytes + excluded.bytes RETURNING bytes",
            (task.task_id, added),
        )
        if staged >= self.fold_threshold(task):
            self._fold_in(tx, task)

    def _fold_in(self, tx: Tx, task: TaskConfig) -> None:
        """Add a task's staged batches to its sums (inside the caller's transaction)."""
        staged = tx.execute(
            "SELECT bucket, slice, data FROM staged WHERE task_id = ? ORDER BY id", (task.task_id,)
        )
        fold_into_sums(tx, task, list(staged))
        tx.execute("DELETE FROM staged WHERE task_id = ?", (task.task_id,))
        tx.execute("DELETE FROM staged_size WHERE task_id = ?", (task.task_id,))

    def fold_staged(self, task: TaskConfig) -> None:
        """Fold a task's staged reports into its sums now (a no-op if there are none)."""
        conn = self._connection()
        if (
            conn.execute(
                "SELECT 1 FROM staged WHERE task_id = ? LIMIT 1", (task.task_id,)
            ).fetchone()
            is None
        ):
            return
        with self._write() as tx:
            self._fold_in(tx, task)

    # -- operations --------------------------------------------------------------------

    def check_writable(self) -> None:
        """Raise StoreFull when the database's file system has under ``READY_FREE`` bytes
        left, then commit the probe's one-row write: that row can fit in pages the WAL
        reuses while no upload fits (a filled disk answered /readyz 200 throughout)."""
        usage = os.statvfs(os.path.dirname(os.path.abspath(self.path)))
        # root may write into the blocks the file system reserves for it
        blocks = usage.f_bfree if os.geteuid() == 0 else usage.f_bavail
        if blocks * usage.f_frsize < READY_FREE:
            raise StoreFull(
                f"{blocks * usage.f_frsize} bytes left on the database's disk "
                f"(ready from {READY_FREE})"
            )
        super().check_writable()

    def backup(self, target: str) -> None:
        """Copy the database to ``target`` with SQLite's online backup (one snapshot).

        Writers go on meanwhile; the copy is a self-contained file (WAL folded in) that
        ``--db`` can open as it is. The target must not exist.
        """
        if os.path.exists(target):
            raise FileExistsError(f"{target} exists; backup writes a new file")
        destination = sqlite3.connect(target)
        try:
            self._connection().backup(destination)
        finally:
            destination.close()
