"""The shared store: PostgreSQL, for several collector nodes behind one load balancer.

The tables and the sums arithmetic are the SQLite store's (:mod:`aggregator.store.sql`), so
both hold bit-identical sums for the same reports. What differs is how concurrent nodes
stay exact without one write lock:

- **Exactly once across nodes.** An upload is one transaction: its report ids go into
  ``seen`` with ``INSERT ... ON CONFLICT DO NOTHING RETURNING`` (ids sorted, so two uploads
  sharing ids cannot deadlock). The primary key decides: when two nodes take the same id
  at once, the second waits for the first to commit and then finds it there. Only the ids
  returned are staged; the rest are replays.
- **No hot rows on ingest.** An upload only inserts: its ids and its reports, packed, in
  ``staged``. Nothing is read-modified-written, so nodes never wait on each other.
- **Folds that concurrent nodes can run.** Staged reports are added to the sums by a fold
  that holds a transaction-scoped advisory lock on the task: one fold per task at a time
  in the whole cluster, while ingest goes on. A node folds after it has staged
  ``staged_bytes`` for a task (skipping if another node is folding it) and before every
  read, so an estimate includes every report acknowledged before it was asked.
- **Faults are answers.** A lost connection, a restarting server, a deadlock or a full
  disk become :class:`StoreUnavailable` / :class:`StoreFull` (503 / 507 with Retry-After);
  nothing of the request was committed, so a client's retry is safe.

Connections come from a psycopg pool, one per worker process (opened lazily, after fork),
each checked before use so that a restarted server is reconnected to transparently.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import psycopg
from psycopg import errors
from psycopg_pool import ConnectionPool

from aggregator.store import shuffled
from aggregator.store.interface import (
    ShuffledBatch,
    ShuffledWindow,
    StoredTask,
    StoredToken,
    StoreFull,
    StoreUnavailable,
    SumsView,
    TaskExists,
    Upload,
)
from aggregator.store.migrations import refuse_newer, shipped, statements
from aggregator.store.reads import snapshot_sums
from aggregator.store.sql import (
    COUNTER,
    first_sightings,
    fold_into_sums,
    record_refusals,
    refusals_in,
    stage,
    staged_rows,
)
from shared import Envelope, TaskConfig

MIGRATIONS_LOCK = (0x1D9, 0)  # advisory lock key (two int4): schema migrations
FOLD_LOCK = 0x1D9 + 1  # first half of a task's fold lock; the second is hashtext(task_id)
# on: a commit is flushed to PostgreSQL's disk before the upload is answered; off: it is
# answered once in PostgreSQL's memory (a node's kill -9 still loses nothing; a crash of
# PostgreSQL itself may lose the last ~0.6 s of acknowledged uploads).
SYNCHRONOUS_COMMIT = ("on", "off", "local", "remote_write", "remote_apply")
_BUSY = (errors.DeadlockDetected, errors.SerializationFailure, errors.LockNotAvailable)


class PgTx:
    """A psycopg connection seen as :class:`aggregator.store.sql.Tx` (``?`` placeholders)."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Iterable[Any]:
        """Run one statement; iterate over its result rows."""
        return self.conn.execute(sql.replace("?", "%s"), parameters)

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> None:
        """Run one statement once per parameter row (pipelined by psycopg)."""
        with self.conn.cursor() as cursor:
            cursor.executemany(sql.replace("?", "%s"), parameters)


def classify(error: BaseException) -> StoreUnavailable | None:
    """Return the retryable store error a PostgreSQL failure means, or None (a bug)."""
    if isinstance(error, errors.DiskFull):
        return StoreFull("the disk holding the PostgreSQL database is full")
    if isinstance(error, _BUSY):
        # "locked" makes the answer's Retry-After short: a retry will likely pass.
        return StoreUnavailable(f"the database is locked (a conflicting transaction): {error}")
    if isinstance(error, psycopg.OperationalError | psycopg.InterfaceError):
        # Connection refused or lost, server shutting down or starting, pool exhausted.
        return StoreUnavailable(f"PostgreSQL cannot be reached now: {error}")
    if isinstance(error, errors.ReadOnlySqlTransaction):
        return StoreUnavailable(f"PostgreSQL accepts no writes now (a standby?): {error}")
    return None


@contextmanager
def _faults() -> Iterator[None]:
    try:
        yield
    except psycopg.Error as error:
        fault = classify(error)
        if fault is None:
            raise
        raise fault from error


class PostgresStore:
    """:class:`~aggregator.store.interface.Store` on a PostgreSQL database (a pool per process)."""

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = 8,
        pool_timeout: float = 10.0,
        connect_timeout: float = 5.0,
        staged_bytes: int = 8 << 20,
        synchronous_commit: str = "on",
    ) -> None:
        if synchronous_commit not in SYNCHRONOUS_COMMIT:
            raise ValueError(
                f"POSTGRES_SYNCHRONOUS_COMMIT must be one of {', '.join(SYNCHRONOUS_COMMIT)}, "
                f"got {synchronous_commit!r}"
            )
        self.synchronous_commit = synchronous_commit
        self.url, self.pool_size, self.pool_timeout = url, pool_size, pool_timeout
        self.connect_timeout, self.staged_bytes = connect_timeout, staged_bytes
        self._pools: dict[int, ConnectionPool] = {}
        self._lock = threading.Lock()
        self._tasks: dict[str, StoredTask] = {}  # tasks are immutable: safe to cache
        self._staged: dict[str, int] = {}  # bytes this process staged per task since a fold

    # -- connections -------------------------------------------------------------------

    def _pool(self) -> ConnectionPool:
        # One pool per process: connections (and the pool's threads) must not cross a fork.
        pid = os.getpid()
        pool = self._pools.get(pid)
        if pool is None:
            with self._lock:
                pool = self._pools.get(pid)
                if pool is None:
                    pool = ConnectionPool(
                        self.url,
                        min_size=1,
                        max_size=self.pool_size,
                        timeout=self.pool_timeout,
                        kwargs={"connect_timeout": max(1, round(self.connect_timeout))},
                        check=ConnectionPool.check_connection,  # reconnect after a restart
                        configure=self._configure,
                        open=False,
                        name=f"ldp-{pid}",
                    )
                    pool.open(wait=False)
                    self._pools = {pid: pool}
        return pool

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        """Set up a new pooled connection (the pool calls this once per connection)."""
        conn.execute(f"SET synchronous_commit = {self.synchronous_commit}")
        conn.commit()

    @contextmanager
    def _write(self) -> Iterator[PgTx]:
        """One committed transaction; PostgreSQL's faults become retryable store errors."""
        with _faults(), self._pool().connection() as conn, conn.transaction():
            yield PgTx(conn)

    @contextmanager
    def _read(self) -> Iterator[PgTx]:
        """One read-only snapshot (REPEATABLE READ): every statement sees the same data."""
        with _faults(), self._pool().connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield PgTx(conn)

    def close(self) -> None:
        """Close this process's pool (the store reopens one if used again)."""
        with self._lock:
            pools, self._pools = self._pools, {}
        for pool in pools.values():
            with contextlib.suppress(Exception):
                pool.close()

    # -- schema ------------------------------------------------------------------------

    def initialize(self) -> None:
        """Bring the schema up to date (idempotent; nodes starting together migrate once)."""
        self.schema_change = self.migrate()

    def migrate(self) -> tuple[int, int]:
        """Apply the pending numbered migrations in order; return (from, to) versions."""
        migrations = shipped("aggregator.store.postgres_migrations")
        latest = migrations[-1][0]
        with self._write() as tx:
            tx.execute("SELECT pg_advisory_xact_lock(?, ?)", MIGRATIONS_LOCK)
            tx.execute(
                "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, "
                "name TEXT NOT NULL, applied_at BIGINT NOT NULL)"
            )
            ((before,),) = tx.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version")
            refuse_newer(int(before), latest)
            for version, name, sql in migrations:
                if version > before:
                    for statement in statements(sql):
                        tx.execute(statement)
                    tx.execute(
                        "INSERT INTO schema_version VALUES (?, ?, ?)",
                        (version, name, int(time.time())),
                    )
        return int(before), latest

    # -- tasks -------------------------------------------------------------------------

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
        except errors.UniqueViolation:
            raise TaskExists(task.config.task_id) from None

    def get_task(self, task_id: str) -> StoredTask | None:
        """Return a task, or None."""
        if task_id not in self._tasks:
            with self._read() as tx:
                rows = list(
                    tx.execute(
                        "SELECT config, upload_key_hash, archive FROM tasks WHERE task_id = ?",
                        (task_id,),
                    )
                )
            if not rows:
                return None
            self._tasks[task_id] = _task(*rows[0])
        return self._tasks[task_id]

    def list_tasks(self) -> list[StoredTask]:
        """Return every task, ordered by id (cached tasks are not rebuilt)."""
        with self._read() as tx:
            ids = [task_id for (task_id,) in tx.execute("SELECT task_id FROM tasks ORDER BY 1")]
            missing = [task_id for task_id in ids if task_id not in self._tasks]
            if missing:
                for task_id, config, key_hash, archive in tx.execute(
                    "SELECT task_id, config, upload_key_hash, archive FROM tasks "
                    "WHERE task_id = ANY(?)",
                    (missing,),
                ):
                    self._tasks[task_id] = _task(config, key_hash, archive)
        return [self._tasks[task_id] for task_id in ids]

    # -- reports -----------------------------------------------------------------------

    def add_reports(
        self, task: TaskConfig, envelopes: Sequence[Envelope], expires: Sequence[int]
    ) -> set[bytes]:
        """Add one upload's reports not seen before; return its replayed ids."""
        return self.add_uploads([Upload(task, envelopes, expires)])[0]

    def add_uploads(self, uploads: Sequence[Upload]) -> list[set[bytes]]:
        """Add the uploads' reports not seen before in one transaction; return the replays."""
        tasks = {upload.task.task_id: upload.task for upload in uploads}
        staged_bytes: dict[str, int] = {}
        with self._write() as tx:
            seen = {task_id: self._claim_ids(tx, task_id, uploads) for task_id in tasks}
            replayed, fresh = first_sightings(uploads, seen)
            record_refusals(tx, uploads)
            for task_id, counted in fresh.items():
                staged = staged_rows(tasks[task_id], [e for e, _ in counted])
                if staged:
                    stored = self.get_task(task_id)
                    stage(tx, staged, archive=stored is not None and stored.archive)
                staged_bytes[task_id] = sum(len(row[2]) for row in staged)
        for task_id, added in staged_bytes.items():
            self._after_staging(tasks[task_id], added)
        return replayed

    @staticmethod
    def _claim_ids(tx: PgTx, task_id: str, uploads: Sequence[Upload]) -> set[bytes]:
        """Insert the task's new ids (first sighting's expiry); return the ids known before.

        One statement in id order, so two nodes inserting overlapping ids cannot deadlock.
        """
        first: dict[bytes, int] = {}
        for upload in uploads:
            if upload.task.task_id == task_id:
                for envelope, expires in zip(upload.envelopes, upload.expires, strict=True):
                    first.setdefault(envelope.report_id, int(expires))
        ids = sorted(first)
        inserted = {
            bytes(report_id)
            for (report_id,) in tx.execute(
                "INSERT INTO seen (task_id, report_id, expires) "
                "SELECT ?, r, x FROM unnest(?::bytea[], ?::bigint[]) WITH ORDINALITY "
                "AS t(r, x, i) ORDER BY i ON CONFLICT DO NOTHING RETURNING report_id",
                (task_id, ids, [first[i] for i in ids]),
            )
        }
        return set(ids) - inserted

    def _after_staging(self, task: TaskConfig, added: int) -> None:
        """Fold once this process has staged ``staged_bytes`` for the task since its last fold."""
        with self._lock:
            total = self._staged.get(task.task_id, 0) + added
            due = total >= self.staged_bytes
            self._staged[task.task_id] = 0 if due else total
        if due:
            self._fold(task, wait=False)

    def fold_staged(self, task: TaskConfig) -> None:
        """Fold every committed staged report of the task into its sums now."""
        self._fold(task, wait=True)

    def _fold(self, task: TaskConfig, *, wait: bool) -> None:
        with self._write() as tx:
            if not any(
                tx.execute("SELECT 1 FROM staged WHERE task_id = ? LIMIT 1", (task.task_id,))
            ):
                return
            key = (FOLD_LOCK, task.task_id)
            if wait:
                tx.execute("SELECT pg_advisory_xact_lock(?, hashtext(?))", key)
            else:
                ((taken,),) = tx.execute("SELECT pg_try_advisory_xact_lock(?, hashtext(?))", key)
                if not taken:
                    return  # another node is folding this task; a later fold takes the rest
            staged = tx.execute(
                "DELETE FROM staged WHERE task_id = ? RETURNING bucket, data", (task.task_id,)
            )
            fold_into_sums(tx, task, list(staged))

    def archived(self, task: TaskConfig) -> Iterator[tuple[int, bytes]]:
        """Yield (bucket, packed batch) of every archived batch of a task, oldest first."""
        with _faults(), self._pool().connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            with conn.cursor(name="ldp_archive") as cursor:  # server-side: rows streamed
                cursor.execute(
                    "SELECT bucket, data FROM archived WHERE task_id = %s ORDER BY id",
                    (task.task_id,),
                )
                for bucket, data in cursor:
                    yield int(bucket), bytes(data)

    def collect_expired(self, now: int) -> int:
        """Forget report ids whose acceptance window closed before ``now``."""
        with self._write() as tx:
            cursor = tx.execute("DELETE FROM seen WHERE expires < ?", (now,))
            return int(getattr(cursor, "rowcount", 0))

    # -- reads -------------------------------------------------------------------------

    @contextmanager
    def read_sums(self, task: TaskConfig, start: int | None, end: int | None) -> Iterator[SumsView]:
        """Yield the task's sums over buckets starting in [start, end), from one snapshot."""
        self.fold_staged(task)  # every report acknowledged so far is in the sums
        with self._read() as tx, snapshot_sums(tx, task, start, end) as sums:
            yield sums

    def refusals(self, task: TaskConfig, start: int | None, end: int | None) -> int:
        """Return how many reports of buckets starting in [start, end) were implausible."""
        with self._read() as tx:
            return refusals_in(tx, task.task_id, start, end)

    def buckets(self, task: TaskConfig) -> list[int]:
        """Return the start times of the buckets holding reports of a task, in order."""
        self.fold_staged(task)
        with self._read() as tx:
            return [
                int(b)
                for (b,) in tx.execute(
                    "SELECT DISTINCT bucket FROM sums WHERE task_id = ? ORDER BY bucket",
                    (task.task_id,),
                )
            ]

    def sum_rows(self, task: TaskConfig) -> Iterator[tuple[int, int, int, np.ndarray]]:
        """Yield (bucket, row, n, counters) of every stored sums row, ordered (export)."""
        self.fold_staged(task)
        with _faults(), self._pool().connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            with conn.cursor(name="ldp_export") as cursor:  # server-side: rows streamed
                cursor.execute(
                    "SELECT bucket, row, n, counters FROM sums WHERE task_id = %s "
                    "ORDER BY bucket, row",
                    (task.task_id,),
                )
                for bucket, row, n, blob in cursor:
                    yield int(bucket), int(row), int(n), np.frombuffer(blob, dtype=COUNTER)

    # -- tokens ------------------------------------------------------------------------

    def add_shuffled_batch(self, batch: ShuffledBatch) -> None:
        """Record a batch a shuffler forwarded (once per batch id)."""
        with self._write() as tx:
            shuffled.record(tx, batch)

    def shuffled_window(
        self, task: TaskConfig, start: int | None, end: int | None
    ) -> ShuffledWindow:
        """Return the task's shuffled batches over buckets starting in [start, end)."""
        with self._read() as tx:
            return shuffled.window(tx, task.task_id, start, end)

    def add_token(self, token_hash: str, role: str) -> None:
        """Store the hash of a new token with its role."""
        with self._write() as tx:
            tx.execute("INSERT INTO tokens VALUES (?, ?, ?)", (token_hash, role, int(time.time())))

    def token_role(self, token_hash: str) -> str | None:
        """Return the role of a stored token hash, or None."""
        with self._read() as tx:
            rows = list(tx.execute("SELECT role FROM tokens WHERE token_hash = ?", (token_hash,)))
        return str(rows[0][0]) if rows else None

    def list_tokens(self) -> list[StoredToken]:
        """Return every stored token, oldest first."""
        with self._read() as tx:
            rows = list(
                tx.execute(
                    "SELECT token_hash, role, created_at FROM tokens "
                    "ORDER BY created_at, token_hash"
                )
            )
        return [StoredToken(str(h), str(r), int(c)) for h, r, c in rows]

    def revoke_token(self, token_hash: str) -> bool:
        """Delete a stored token; return whether there was one."""
        with self._write() as tx:
            cursor = tx.execute("DELETE FROM tokens WHERE token_hash = ?", (token_hash,))
            return int(getattr(cursor, "rowcount", 0)) > 0

    # -- operations --------------------------------------------------------------------

    def backup(self, target: str) -> None:
        """PostgreSQL is backed up with its own tools; say which rather than copy badly."""
        raise NotImplementedError(
            "a PostgreSQL store is backed up with PostgreSQL's tools: "
            "pg_dump --format=custom --file=BACKUP 'postgresql://...' "
            "(restore with pg_restore); see docs/operations.md"
        )

    def check_writable(self) -> None:
        """Commit a one-row write (raises if PostgreSQL cannot take one)."""
        with self._write() as tx:
            tx.execute(
                "INSERT INTO probe VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET at = excluded.at",
                (int(time.time()),),
            )


def _task(config: str, upload_key_hash: str | None, archive: int) -> StoredTask:
    return StoredTask(TaskConfig.from_dict(json.loads(config)), upload_key_hash, bool(archive))
