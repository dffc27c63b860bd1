"""The shared store: PostgreSQL, for several collector nodes behind one load balancer.

The tables, the sums arithmetic (:mod:`ldp_telemetry.aggregator.store.sql`) and every statement both
stores run alike (:mod:`ldp_telemetry.aggregator.store.base`) are the SQLite store's, so both hold
bit-identical sums for the same reports. What differs is how concurrent nodes stay exact
without one write lock:

- **Exactly once across nodes.** A group of uploads is one transaction, and the primary key
  of ``seen`` decides: when two nodes take the same id at once, the second waits for the
  first to commit and then finds it there. A group is first tried as one statement that
  inserts every new id plainly (:mod:`ldp_telemetry.aggregator.store.postgres.writer`): an id stored
  before makes it fail whole, and the group is then committed by the general path, which
  claims ids with ``INSERT ... ON CONFLICT DO NOTHING RETURNING`` and stages only the ids
  returned. Ids are sorted in both, so two writers sharing ids cannot deadlock.
- **No hot rows on ingest.** An upload only inserts: its ids and its reports, packed, in
  ``staged``. Nothing is read-modified-written, so nodes never wait on each other.
- **Folds that concurrent nodes can run.** Staged reports are added to the sums by a fold
  that holds a transaction-scoped advisory lock on the task: one fold per task at a time in the
  whole cluster, while ingest goes on. A node folds after it has staged ``staged_bytes`` for a task,
  on a thread of its own (:mod:`ldp_telemetry.aggregator.store.postgres.folder`; skipping if another
  node is folding it), and before every read, so an estimate includes every report acknowledged
  before it was asked.
- **Faults are answers.** A lost connection, a restarting server, a deadlock or a full
  disk become :class:`StoreUnavailable` / :class:`StoreFull` (503 / 507 with Retry-After);
  nothing of the request was committed, so a client's retry is safe.

Connections come from a psycopg pool, one per worker process (opened lazily, after fork),
each checked before use so that a restarted server is reconnected to transparently; the
group-commit writer has a connection of its own, checked after a pause.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import errors
from psycopg_pool import ConnectionPool

from ldp_telemetry.aggregator.store.base import SqlStore
from ldp_telemetry.aggregator.store.interface import Upload
from ldp_telemetry.aggregator.store.postgres import arrays
from ldp_telemetry.aggregator.store.postgres import writer as postgres_writer
from ldp_telemetry.aggregator.store.postgres.faults import faults
from ldp_telemetry.aggregator.store.postgres.folder import Folder
from ldp_telemetry.aggregator.store.postgres.migrations import SCHEMA
from ldp_telemetry.aggregator.store.sql import Rows, Tx, fold_into_sums
from ldp_telemetry.shared import TaskConfig

FOLD_LOCK = 0x1D9 + 1  # first half of a task's fold lock; the second is hashtext(task_id)
# on: a commit is flushed to PostgreSQL's disk before the upload is answered; off: it is
# answered once in PostgreSQL's memory (a node's kill -9 still loses nothing; a crash of
# PostgreSQL itself may lose the last ~0.6 s of acknowledged uploads).
SYNCHRONOUS_COMMIT = ("on", "off", "local", "remote_write", "remote_apply")
KEY_TYPES = {"task_id": "text", "bucket": "int8", "slice": "int4"}  # sums and roll-up keys
_SNAPSHOT = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"


class PgTx:
    """A psycopg connection seen as :class:`ldp_telemetry.aggregator.store.sql.Tx` (``?``
    placeholders)."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Rows:
        """Run one statement; return its result rows."""
        return self.conn.execute(sql.replace("?", "%s"), parameters)

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> None:
        """Run one statement once per parameter row (pipelined by psycopg)."""
        with self.conn.cursor() as cursor:
            cursor.executemany(sql.replace("?", "%s"), parameters)

    def upsert_rows(
        self,
        table: str,
        key: tuple[str, ...],
        values: tuple[Any, ...],
        written: tuple[list[int], list[int], list[bytes]],
    ) -> None:
        """Insert or replace a fold's sums rows in one statement over binary arrays
        (:mod:`~ldp_telemetry.aggregator.store.postgres.arrays`): executemany sent one
        statement per row, 94 µs of this process's CPU per row (a fold of 40,000 CMS reports
        over 20 slices rewrites 51,102 rows)."""
        rows, counts, blobs = written
        columns = ", ".join(key)
        self.conn.execute(
            f"INSERT INTO {table} ({columns}, row, n, counters) "
            f"SELECT {', '.join(f'%s::{KEY_TYPES[c]}' for c in key)}, r, c, b "
            "FROM unnest(%b::int4[], %b::int8[], %b::bytea[]) AS u(r, c, b) "
            f"ON CONFLICT ({columns}, row) "
            "DO UPDATE SET n = excluded.n, counters = excluded.counters",
            (
                *values,
                arrays.int4_array(rows),
                arrays.int8_array(counts),
                arrays.bytea_array(blobs),
            ),
        )


class PostgresStore(SqlStore):
    """:class:`~ldp_telemetry.aggregator.store.interface.Store` on a PostgreSQL database (a pool per
    process)."""

    schema = SCHEMA
    duplicate = errors.UniqueViolation
    # The group commit's longest wait for more uploads after the first (GROUP_COMMIT_WAIT_MS
    # unset; GroupCommitter._gather stops it sooner when no more can come): a commit costs a
    # round trip and a WAL flush whatever its size, so waiting up to 2 ms under load gives
    # fewer, larger groups (benchmarks/README.md, "PostgreSQL at SQLite's pace").
    group_commit_wait = 0.002

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
        super().__init__(staged_bytes=staged_bytes)
        self.synchronous_commit = synchronous_commit
        self.url, self.pool_size, self.pool_timeout = url, pool_size, pool_timeout
        self.connect_timeout = connect_timeout
        self._pools: dict[int, ConnectionPool] = {}
        self._lock = threading.Lock()
        self._staged: dict[str, int] = {}  # bytes this process staged per task since a fold
        self._folder = Folder(lambda task: self._fold(task, wait=False))
        self._writer = postgres_writer.WriterConnection(
            url, connect_timeout=connect_timeout, synchronous_commit=synchronous_commit
        )

    # -- connections and transactions --------------------------------------------------

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
        arrays.register(conn.adapters)  # a fold's rows go as built (PgTx.upsert_rows)

    @contextmanager
    def _write(self) -> Iterator[PgTx]:
        """One committed transaction; PostgreSQL's faults become retryable store errors."""
        with faults(), self._pool().connection() as conn, conn.transaction():
            yield PgTx(conn)

    @contextmanager
    def _read(self) -> Iterator[PgTx]:
        """One read-only snapshot (REPEATABLE READ): every statement sees the same data."""
        with faults(), self._pool().connection() as conn, conn.transaction():
            conn.execute(_SNAPSHOT)
            yield PgTx(conn)

    def _stream(self, sql: str, parameters: Sequence[Any]) -> Iterator[Any]:
        with faults(), self._pool().connection() as conn, conn.transaction():
            conn.execute(_SNAPSHOT)
            with conn.cursor(name="ldp_stream") as cursor:  # server-side: rows streamed
                cursor.execute(sql.replace("?", "%s"), parameters)
                yield from cursor

    def close(self) -> None:
        """Close this process's pool (the store reopens one if used again)."""
        self._folder.close()
        self._writer.close()
        with self._lock:
            pools, self._pools = self._pools, {}
        for pool in pools.values():
            with contextlib.suppress(Exception):
                pool.close()

    # -- ingest: ids, folds ------------------------------------------------------------

    def add_uploads(self, uploads: Sequence[Upload]) -> list[set[bytes]]:
        """Add the uploads' reports not seen before in one transaction; return the replays.

        One statement on the writer's connection when no id was stored before
        (:mod:`ldp_telemetry.aggregator.store.postgres.writer`); else the general path, which finds
        them.
        """
        if not uploads:
            return []
        self._note_slices(uploads)
        group = postgres_writer.prepare(uploads, self._archives)
        if not self._writer.commit(group):
            return super().add_uploads(uploads)
        for task in {upload.task.task_id: upload.task for upload in uploads}.values():
            if task.task_id in group.added:
                self._after_commit(task, group.added[task.task_id])
        return group.replayed

    def _archives(self, task_id: str) -> bool:
        stored = self.get_task(task_id)
        return stored is not None and stored.archive

    def _claim(self, tx: Tx, task_id: str, first: dict[bytes, int]) -> set[bytes]:
        """Insert the task's new ids; return the ids known before.

        One statement in id order, so two nodes inserting overlapping ids cannot deadlock.
        """
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

    def _after_commit(self, task: TaskConfig, added: int) -> None:
        """Fold once this process has staged the task's ``fold_threshold`` since its last fold.

        On the folding thread (:mod:`ldp_telemetry.aggregator.store.postgres.folder`): the writer
        goes on.
        """
        with self._lock:
            total = self._staged.get(task.task_id, 0) + added
            due = total >= self.fold_threshold(task)
            self._staged[task.task_id] = 0 if due else total
        if due:
            self._folder.ask(task)

    def _before_read(self, task: TaskConfig) -> None:
        """Fold first, so the sums of every node's acknowledged reports are folded once."""
        self.fold_staged(task)

    def fold_staged(self, task: TaskConfig) -> None:
        """Fold every committed staged report of the task into its sums now."""
        self._fold(task, wait=True)

    def _hold_folds(self, tx: Tx, task: TaskConfig) -> None:
        """Wait for the task's fold lock (held until ``tx`` ends)."""
        tx.execute("SELECT pg_advisory_xact_lock(?, hashtext(?))", (FOLD_LOCK, task.task_id))

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
                "DELETE FROM staged WHERE task_id = ? RETURNING bucket, slice, data",
                (task.task_id,),
            )
            fold_into_sums(tx, task, list(staged))

    # -- operations --------------------------------------------------------------------

    def backup(self, target: str) -> None:
        """PostgreSQL is backed up with its own tools; say which rather than copy badly."""
        raise NotImplementedError(
            "a PostgreSQL store is backed up with PostgreSQL's tools: "
            "pg_dump --format=custom --file=BACKUP 'postgresql://...' "
            "(restore with pg_restore); see docs/operations.md"
        )
