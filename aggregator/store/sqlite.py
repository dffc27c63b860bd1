"""The embedded store: one SQLite file in WAL mode, safe for several worker processes.

Sums are kept per (task, bucket, row) as the row's report count ``n`` and its counters as
a BLOB of little-endian int64. An upload is one ``BEGIN IMMEDIATE`` transaction (the
database's single writer lock): check and record the ids, stage the new reports packed
(:mod:`aggregator.store.staging`), and, once a task's staged bytes pass ``staged_bytes``, fold
them into the rows they touch (read, add, write back), then commit. Workers therefore
serialize their read-modify-writes and any number of them give the same sums as one. The
view answers only after ``COMMIT`` returns. Reads add what is staged in memory, from their
own snapshot (:mod:`aggregator.store.staged_view`): an analyst never takes the write lock.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from aggregator.core.metrics import STORE_LOCK_WAIT
from aggregator.store import shuffled
from aggregator.store.interface import (
    ShuffledBatch,
    ShuffledWindow,
    StoredTask,
    StoredToken,
    SumsView,
    TaskExists,
    Upload,
)
from aggregator.store.reads import NO_LIMIT, snapshot_sums, stored_buckets
from aggregator.store.sql import (
    CHUNK,
    COUNTER,
    first_sightings,
    fold_into_sums,
    record_refusals,
    refusals_in,
    stage,
    staged_rows,
)
from aggregator.store.sqlite_faults import CHECK_EVERY, WAL_LIMIT, FileIdentity, bound_wal, classify
from aggregator.store.sqlite_lock import WriterLock
from aggregator.store.sqlite_migrations import apply_migrations
from shared import Envelope, TaskConfig


class SqliteStore:
    """:class:`~aggregator.store.interface.Store` on one SQLite file (a connection per thread)."""

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
        self.path, self.synchronous, self.busy_timeout = path, synchronous.upper(), busy_timeout
        self.staged_bytes = staged_bytes
        self._local = threading.local()
        self._tasks: dict[str, StoredTask] = {}  # tasks are immutable: safe to cache
        self._identity = FileIdentity(path)
        self._writer = WriterLock(path)

    def _connection(self) -> sqlite3.Connection:
        # One connection per thread and per process: a connection must not cross a fork.
        conn = getattr(self._local, "conn", None)
        if conn is None or self._local.pid != os.getpid():
            conn = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
            # In WAL mode NORMAL writes every commit to the WAL file before COMMIT returns
            # (no fsync): a killed process (kill -9) loses nothing, a power cut may lose the
            # last commits. FULL also fsyncs each commit.
            conn.execute(f"PRAGMA synchronous={self.synchronous}")
            conn.execute(f"PRAGMA journal_size_limit={WAL_LIMIT}")
            self._local.conn, self._local.pid, self._local.commits = conn, os.getpid(), 0
        return conn

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
            fault = classify(error)
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
            fault = classify(error) if isinstance(error, sqlite3.Error) else None
            if fault is not None:
                raise fault from error
            raise
        self._local.commits += 1
        if self._local.commits % CHECK_EVERY == 0:
            bound_wal(conn, self.path)

    def initialize(self) -> None:
        """Switch the file to WAL mode and bring its schema up to date (idempotent)."""
        conn = self._connection()
        conn.execute("PRAGMA journal_mode=WAL")  # persistent: stored in the file
        self._identity.remember()
        self.schema_change = self.migrate()  # (from, to): what ``ldp-aggregator migrate`` says

    def migrate(self) -> tuple[int, int]:
        """Apply the pending numbered migrations in order; return (from, to) versions."""
        with self._write() as tx:
            return apply_migrations(tx)

    def create_task(self, task: StoredTask) -> None:
        """Store a new task, or raise TaskExists."""
        config = json.dumps(task.config.to_dict(), sort_keys=True)
        try:
            with self._write() as tx:
                tx.execute(
                    "INSERT INTO tasks (task_id, config, upload_key_hash, created_at, archive) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (
                        task.config.task_id,
                        config,
                        task.upload_key_hash,
                        int(time.time()),
                        int(task.archive),
                    ),
                )
        except sqlite3.IntegrityError:
            raise TaskExists(task.config.task_id) from None

    def get_task(self, task_id: str) -> StoredTask | None:
        """Return a task, or None."""
        if task_id not in self._tasks:
            row = (
                self._connection()
                .execute(
                    "SELECT config, upload_key_hash, archive FROM tasks WHERE task_id = ?",
                    (task_id,),
                )
                .fetchone()
            )
            if row is None:
                return None
            self._tasks[task_id] = _task(*row)
        return self._tasks[task_id]

    def list_tasks(self) -> list[StoredTask]:
        """Return every task, ordered by id."""
        # Tasks are immutable: a cached one is reused, so listing does not rebuild every
        # task's mechanism (a sketch's hash rows) on every call.
        ids = [
            task_id
            for (task_id,) in self._connection().execute(
                "SELECT task_id FROM tasks ORDER BY task_id"
            )
        ]
        missing = [task_id for task_id in ids if task_id not in self._tasks]
        for start in range(0, len(missing), CHUNK):
            part = missing[start : start + CHUNK]
            for task_id, config, key_hash, archive in self._connection().execute(
                f"SELECT task_id, config, upload_key_hash, archive FROM tasks WHERE task_id IN "
                f"({','.join('?' * len(part))})",
                part,
            ):
                self._tasks[task_id] = _task(config, key_hash, archive)
        return [self._tasks[task_id] for task_id in ids]

    def add_reports(
        self, task: TaskConfig, envelopes: Sequence[Envelope], expires: Sequence[int]
    ) -> set[bytes]:
        """Add one upload's reports not seen before; return its replayed ids."""
        return self.add_uploads([Upload(task, envelopes, expires)])[0]

    def add_uploads(self, uploads: Sequence[Upload]) -> list[set[bytes]]:
        """Add the uploads' reports not seen before in one transaction; return the replays."""
        tasks = {upload.task.task_id: upload.task for upload in uploads}
        sent = {
            task_id: [e for u in uploads if u.task.task_id == task_id for e in u.envelopes]
            for task_id in tasks
        }
        # Packed before taking the write lock, which the other workers wait for: replays
        # are rare, so every report is packed as new and repacked only if some were not.
        packed = {task_id: staged_rows(tasks[task_id], sent[task_id]) for task_id in tasks}
        with self._write() as tx:
            seen = {
                task_id: self._seen(tx, task_id, [e.report_id for e in sent[task_id]])
                for task_id in tasks
            }
            replayed, fresh = first_sightings(uploads, seen)
            record_refusals(tx, uploads)
            for task_id, counted in fresh.items():
                if counted:
                    tx.executemany(
                        "INSERT INTO seen VALUES (?, ?, ?)",
                        [(task_id, e.report_id, x) for e, x in counted],
                    )
                    rows = (
                        packed[task_id]
                        if len(counted) == len(sent[task_id])
                        else staged_rows(tasks[task_id], [e for e, _ in counted])
                    )
                    self._stage(tx, tasks[task_id], rows)
        return replayed

    def _stage(
        self, tx: sqlite3.Connection, task: TaskConfig, packed: list[tuple[str, int, bytes]]
    ) -> None:
        """Stage new reports (packed, one row per bucket); fold them once there are enough."""
        stored = self.get_task(task.task_id)
        stage(tx, packed, archive=stored is not None and stored.archive)
        staged = tx.execute(
            "INSERT INTO staged_size VALUES (?, ?) ON CONFLICT (task_id) DO UPDATE "
            "SET bytes = bytes + excluded.bytes RETURNING bytes",
            (task.task_id, sum(len(row[2]) for row in packed)),
        ).fetchone()[0]
        if staged >= self.staged_bytes:
            self._fold_staged(tx, task)

    def _fold_staged(self, tx: sqlite3.Connection, task: TaskConfig) -> None:
        """Add a task's staged batches to its sums (inside the caller's transaction)."""
        staged = tx.execute(
            "SELECT bucket, data FROM staged WHERE task_id = ? ORDER BY id", (task.task_id,)
        )
        fold_into_sums(tx, task, staged.fetchall())
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
            self._fold_staged(tx, task)

    @staticmethod
    def _seen(tx: sqlite3.Connection, task_id: str, ids: list[bytes]) -> set[bytes]:
        found: set[bytes] = set()
        for start in range(0, len(ids), CHUNK):
            part = ids[start : start + CHUNK]
            marks = ",".join("?" * len(part))
            found.update(
                row[0]
                for row in tx.execute(
                    f"SELECT report_id FROM seen WHERE task_id = ? AND report_id IN ({marks})",
                    (task_id, *part),
                )
            )
        return found

    def archived(self, task: TaskConfig) -> Iterator[tuple[int, bytes]]:
        """Yield (bucket, packed batch) of every archived batch of a task, oldest first."""
        conn = sqlite3.connect(self.path, timeout=self.busy_timeout)  # its own snapshot
        try:
            yield from conn.execute(
                "SELECT bucket, data FROM archived WHERE task_id = ? ORDER BY id", (task.task_id,)
            )
        finally:
            conn.close()

    def collect_expired(self, now: int) -> int:
        """Forget report ids whose acceptance window closed before ``now``."""
        with self._write() as tx:
            return tx.execute("DELETE FROM seen WHERE expires < ?", (now,)).rowcount

    @contextmanager
    def read_sums(self, task: TaskConfig, start: int | None, end: int | None) -> Iterator[SumsView]:
        """Yield the task's sums over buckets starting in [start, end), from one snapshot.

        Every report acknowledged so far is in it: the sums and, added in memory, what is
        staged (nothing is written, so no write lock is waited for or held).
        """
        conn = self._connection()
        conn.execute("BEGIN")  # one WAL snapshot for n and every row block; writers go on
        try:
            with snapshot_sums(conn, task, start, end) as sums:
                yield sums
        finally:
            conn.execute("COMMIT")

    def add_shuffled_batch(self, batch: ShuffledBatch) -> None:
        """Record a batch a shuffler forwarded (once per batch id)."""
        with self._write() as tx:
            shuffled.record(tx, batch)

    def shuffled_window(
        self, task: TaskConfig, start: int | None, end: int | None
    ) -> ShuffledWindow:
        """Return the task's shuffled batches over buckets starting in [start, end)."""
        return shuffled.window(self._connection(), task.task_id, start, end)

    def add_token(self, token_hash: str, role: str) -> None:
        """Store the hash of a new token with its role."""
        with self._write() as tx:
            tx.execute("INSERT INTO tokens VALUES (?, ?, ?)", (token_hash, role, int(time.time())))

    def token_role(self, token_hash: str) -> str | None:
        """Return the role of a stored token hash, or None."""
        row = (
            self._connection()
            .execute("SELECT role FROM tokens WHERE token_hash = ?", (token_hash,))
            .fetchone()
        )
        return None if row is None else str(row[0])

    def list_tokens(self) -> list[StoredToken]:
        """Return every stored token, oldest first."""
        rows = self._connection().execute(
            "SELECT token_hash, role, created_at FROM tokens ORDER BY created_at, token_hash"
        )
        return [StoredToken(str(h), str(r), int(c)) for h, r, c in rows]

    def revoke_token(self, token_hash: str) -> bool:
        """Delete a stored token; return whether there was one."""
        with self._write() as tx:
            return tx.execute("DELETE FROM tokens WHERE token_hash = ?", (token_hash,)).rowcount > 0

    def refusals(self, task: TaskConfig, start: int | None, end: int | None) -> int:
        """Return how many reports of buckets starting in [start, end) were implausible."""
        return refusals_in(self._connection(), task.task_id, start, end)

    def buckets(self, task: TaskConfig) -> list[int]:
        """Return the start times of the buckets holding reports of a task, in order."""
        conn = self._connection()
        conn.execute("BEGIN")  # one snapshot: a fold moving staged rows to sums meanwhile
        try:
            staged = conn.execute(
                "SELECT DISTINCT bucket FROM staged WHERE task_id = ?", (task.task_id,)
            )
            found = {int(b) for (b,) in staged}
            found.update(stored_buckets(conn, task.task_id, *NO_LIMIT))
        finally:
            conn.execute("COMMIT")
        return sorted(found)

    def sum_rows(self, task: TaskConfig) -> Iterator[tuple[int, int, int, np.ndarray]]:
        """Yield (bucket, row, n, counters) of every stored sums row, ordered (export)."""
        self.fold_staged(task)
        conn = sqlite3.connect(self.path, timeout=self.busy_timeout)  # its own snapshot
        try:
            for bucket, row, n, blob in conn.execute(
                "SELECT bucket, row, n, counters FROM sums WHERE task_id = ? ORDER BY bucket, row",
                (task.task_id,),
            ):
                yield int(bucket), int(row), int(n), np.frombuffer(blob, dtype=COUNTER)
        finally:
            conn.close()

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

    def check_writable(self) -> None:
        """Commit a one-row write (raises sqlite3.Error if the file cannot be written)."""
        with self._write() as tx:
            tx.execute("INSERT OR REPLACE INTO probe VALUES (1, ?)", (int(time.time()),))


def _task(config: str, upload_key_hash: str | None, archive: int) -> StoredTask:
    return StoredTask(TaskConfig.from_dict(json.loads(config)), upload_key_hash, bool(archive))
