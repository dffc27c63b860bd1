"""What both SQL stores do alike: the class SQLite and PostgreSQL inherit.

Both keep the same tables (:mod:`ldp_telemetry.aggregator.store.sql`) and run the same statements
for tasks, tokens, expiry, refusals, shuffled batches, buckets and sum reads, so those live here
once. A backend supplies only what truly differs: how a write transaction and a read snapshot are
opened (:meth:`SqlStore._write`, :meth:`SqlStore._read`), how an upload's ids are claimed in
``seen`` (:meth:`SqlStore._claim`), when and under which lock staged reports are folded, how export
rows are streamed, and its dialect of the migrations (:attr:`SqlStore.schema`).

An upload's new reports are packed before its transaction opens, in both backends: packing
needs nothing from the database, and the transaction is what concurrent writers wait for
(SQLite's one write lock; in PostgreSQL the ``seen`` and ``refusals`` rows it inserted, and
its pooled connection, until it commits). Replays are rare, so an upload that has some is
simply packed again without them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, ClassVar

import numpy as np

from ldp_telemetry.aggregator.store import counters, rollup, shuffled
from ldp_telemetry.aggregator.store.interface import (
    ShuffledBatch,
    ShuffledWindow,
    SlicedSums,
    StoredTask,
    StoredToken,
    SumsView,
    TaskExists,
    Upload,
)
from ldp_telemetry.aggregator.store.migrations import Schema, apply_migrations
from ldp_telemetry.aggregator.store.reads import (
    NO_LIMIT,
    SnapshotSlices,
    slice_counts,
    stored_buckets,
)
from ldp_telemetry.aggregator.store.sql import (
    CHUNK,
    StagedRow,
    Tx,
    first_expiries,
    first_sightings,
    marks,
    record_refusals,
    refusals_in,
    stage,
    staged_rows,
)
from ldp_telemetry.shared import Envelope, TaskConfig

FOLD_SLICES = 32  # the most slices the fold threshold grows with (fold_threshold)


class SqlStore:
    """:class:`~ldp_telemetry.aggregator.store.interface.Store` on SQL tables (a backend opens
    transactions)."""

    schema: ClassVar[Schema]  # the backend's migrations
    duplicate: ClassVar[type[Exception]]  # what its driver raises for a taken primary key
    schema_change: tuple[int, int]  # (from, to) of the last migrate: what ``migrate`` says

    def __init__(self, *, staged_bytes: int) -> None:
        self.staged_bytes = staged_bytes
        self._staged_slices: dict[str, set[int]] = {}  # per task, the slices it staged here
        self._tasks: dict[str, StoredTask] = {}  # tasks are immutable: safe to cache
        self._rolled_up: set[str] = set()  # tasks whose roll-up is ready (it stays so)

    # -- what a backend supplies -------------------------------------------------------

    def _write(self) -> AbstractContextManager[Tx]:
        """Return one write transaction, committed when the block ends without error."""
        raise NotImplementedError

    def _read(self) -> AbstractContextManager[Tx]:
        """Return one read snapshot: every statement in the block sees the same data."""
        raise NotImplementedError

    def _claim(self, tx: Tx, task_id: str, first: dict[bytes, int]) -> set[bytes]:
        """Insert the ids not in ``seen`` with their expiry; return the ids known before."""
        raise NotImplementedError

    def _stream(self, sql: str, parameters: Sequence[Any]) -> Iterator[Any]:
        """Yield the rows of one query from a snapshot of its own, without loading them all."""
        raise NotImplementedError

    def fold_staged(self, task: TaskConfig) -> None:
        """Fold a task's staged reports into its sums now (a no-op if there are none)."""
        raise NotImplementedError

    def _after_stage(self, tx: Tx, task: TaskConfig, added: int) -> None:
        """Note ``added`` staged bytes inside the upload's transaction (default: nothing)."""

    def _after_commit(self, task: TaskConfig, added: int) -> None:
        """Note ``added`` staged bytes once the upload is committed (default: nothing)."""

    def _before_read(self, task: TaskConfig) -> None:
        """Prepare a read of the task's sums or buckets (default: nothing)."""

    def _hold_folds(self, tx: Tx, task: TaskConfig) -> None:
        """Keep the task's folds out until ``tx`` ends (default: the write lock does)."""

    # -- schema ------------------------------------------------------------------------

    def initialize(self) -> None:
        """Bring the schema up to date (idempotent; safe from every process)."""
        self.schema_change = self.migrate()

    def migrate(self) -> tuple[int, int]:
        """Apply the pending numbered migrations in order; return (from, to) versions."""
        with self._write() as tx:
            return apply_migrations(tx, self.schema)

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
                rollup.mark_ready(tx, task.config.task_id)  # no sums yet: every fold goes in
        except self.duplicate:
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
        """Return every task, ordered by id."""
        # Tasks are immutable: a cached one is reused, so listing does not rebuild every
        # task's mechanism (a sketch's hash rows) on every call.
        with self._read() as tx:
            ids = [t for (t,) in tx.execute("SELECT task_id FROM tasks ORDER BY task_id")]
            missing = [task_id for task_id in ids if task_id not in self._tasks]
            for start in range(0, len(missing), CHUNK):
                part = missing[start : start + CHUNK]
                for task_id, config, key_hash, archive in tx.execute(
                    "SELECT task_id, config, upload_key_hash, archive FROM tasks "
                    f"WHERE task_id IN ({marks(len(part))})",
                    part,
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
        self._note_slices(uploads)
        tasks = {upload.task.task_id: upload.task for upload in uploads}
        sent = {
            task_id: [e for u in uploads if u.task.task_id == task_id for e in u.envelopes]
            for task_id in tasks
        }
        # Packed before the transaction (see the module's docstring): every report as new.
        packed = {task_id: staged_rows(tasks[task_id], sent[task_id]) for task_id in tasks}
        added: dict[str, int] = {}
        with self._write() as tx:
            seen = {
                task_id: self._claim(tx, task_id, first_expiries(uploads, task_id))
                for task_id in tasks
            }
            replayed, fresh = first_sightings(uploads, seen)
            record_refusals(tx, uploads)
            for task_id, counted in fresh.items():
                rows = (
                    packed[task_id]
                    if len(counted) == len(sent[task_id])
                    else staged_rows(tasks[task_id], [e for e, _ in counted])
                )
                added[task_id] = self._stage(tx, tasks[task_id], rows)
        for task_id, size in added.items():
            self._after_commit(tasks[task_id], size)
        return replayed

    def _stage(self, tx: Tx, task: TaskConfig, rows: list[StagedRow]) -> int:
        """Stage new reports (packed, one row per bucket and slice); return their bytes."""
        if not rows:
            return 0
        stored = self.get_task(task.task_id)
        stage(tx, rows, archive=stored is not None and stored.archive)
        added = sum(len(row[3]) for row in rows)
        self._after_stage(tx, task, added)
        return added

    def _note_slices(self, uploads: Sequence[Upload]) -> None:
        """Note the slices the uploads of tasks with dimensions stage reports in."""
        for upload in uploads:
            if upload.task.dimensions is not None:
                noted = self._staged_slices.setdefault(upload.task.task_id, set())
                noted.update({envelope.slice for envelope in upload.envelopes})

    def fold_threshold(self, task: TaskConfig) -> int:
        """Return the staged bytes past which a task's staged reports are folded:
        ``staged_bytes`` per slice the task has staged reports in (up to ``FOLD_SLICES``).

        A fold rewrites every sums row its reports touch, once per slice: a sketch task
        whose reports spread over 20 slices touches up to 20 times the rows of one without
        dimensions for the same reports (measured: CMS k = 2,048, 40,000 reports, 25,551
        (slice, row) pairs against 2,048). Folding after ``staged_bytes`` per slice gives
        each slice's fold the reports per rewritten row of a task without dimensions (8
        slices at most, before: 0.77× the CPU throughput of the task without at 20 slices,
        0.88× with every slice counted). A read adds the staged reports in memory, so the
        factor is bounded (benchmarks/README.md, "Folds of a task with dimensions").
        """
        slices = len(self._staged_slices.get(task.task_id, ()))
        return self.staged_bytes * max(1, min(slices, FOLD_SLICES))

    def archived(self, task: TaskConfig) -> Iterator[tuple[int, int, bytes]]:
        """Yield (bucket, slice, packed batch) of every archived batch of a task, oldest first."""
        for bucket, slice_index, data in self._stream(
            "SELECT bucket, slice, data FROM archived WHERE task_id = ? ORDER BY id",
            (task.task_id,),
        ):
            yield int(bucket), int(slice_index), bytes(data)

    def collect_expired(self, now: int) -> int:
        """Forget report ids whose acceptance window closed before ``now``."""
        with self._write() as tx:
            return int(tx.execute("DELETE FROM seen WHERE expires < ?", (now,)).rowcount)

    # -- reads -------------------------------------------------------------------------

    @contextmanager
    def read_sums(self, task: TaskConfig, start: int | None, end: int | None) -> Iterator[SumsView]:
        """Yield the task's totals over buckets starting in [start, end) (every slice), from
        one snapshot (:meth:`read_slices`' ``sums()``)."""
        with self.read_slices(task, start, end) as sliced:
            yield sliced.sums()

    @contextmanager
    def read_slices(
        self, task: TaskConfig, start: int | None, end: int | None
    ) -> Iterator[SlicedSums]:
        """Yield every slice's sums over buckets starting in [start, end) from one snapshot:
        the reports per slice and the sums of any set of slices.

        Every report acknowledged so far is in it: the sums and, added in memory, what is
        staged in that snapshot (:mod:`ldp_telemetry.aggregator.store.staged_view`).
        """
        self._before_read(task)
        self._ensure_rollup(task)
        with self._read() as tx:
            yield SnapshotSlices(tx, task, start, end)

    def slice_counts(self, task: TaskConfig, start: int | None, end: int | None) -> dict[int, int]:
        """Return the reports per slice index over buckets starting in [start, end): only
        the slices that have some (a task without dimensions: {0: n}, or {})."""
        self._before_read(task)
        self._ensure_rollup(task)
        with self._read() as tx:
            return slice_counts(tx, task, start, end)

    def _ensure_rollup(self, task: TaskConfig) -> None:
        """Build a sketch task's roll-up if it predates the roll-up (once per database)."""
        rows, width = task.mechanism_object.sums_shape
        if rows == 1 or task.task_id in self._rolled_up:
            return
        with self._read() as tx:
            ready = rollup.is_ready(tx, task.task_id)
        if not ready:
            with self._write() as tx:
                self._hold_folds(tx, task)
                if not rollup.is_ready(tx, task.task_id):
                    buckets = stored_buckets(tx, task.task_id, *NO_LIMIT)
                    rollup.build(tx, task.task_id, rows, width, buckets)
        self._rolled_up.add(task.task_id)

    def buckets(self, task: TaskConfig) -> list[int]:
        """Return the start times of the buckets holding reports of a task, in order."""
        self._before_read(task)
        with self._read() as tx:  # one snapshot: a fold may move staged rows to sums
            staged = tx.execute(
                "SELECT DISTINCT bucket FROM staged WHERE task_id = ?", (task.task_id,)
            )
            found = {int(b) for (b,) in staged}
            found.update(stored_buckets(tx, task.task_id, *NO_LIMIT))
        return sorted(found)

    def refusals(self, task: TaskConfig, start: int | None, end: int | None) -> int:
        """Return how many reports of buckets starting in [start, end) were implausible."""
        with self._read() as tx:
            return refusals_in(tx, task.task_id, start, end)

    def sum_rows(self, task: TaskConfig) -> Iterator[tuple[int, int, int, int, np.ndarray]]:
        """Yield (bucket, slice, row, n, counters) of every stored sums row, ordered (export)."""
        self.fold_staged(task)
        width = task.mechanism_object.sums_shape[1]
        for bucket, slice_index, row, n, blob in self._stream(
            "SELECT bucket, slice, row, n, counters FROM sums WHERE task_id = ? "
            "ORDER BY bucket, slice, row",
            (task.task_id,),
        ):
            yield int(bucket), int(slice_index), int(row), int(n), counters.decode_one(blob, width)

    # -- shuffled batches --------------------------------------------------------------

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

    # -- tokens ------------------------------------------------------------------------

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
            return tx.execute("DELETE FROM tokens WHERE token_hash = ?", (token_hash,)).rowcount > 0

    # -- operations --------------------------------------------------------------------

    def check_writable(self) -> None:
        """Commit a one-row write (raises the backend's error if it cannot).

        The row changes on every probe: a probe that wrote the row's own bytes again (two
        within one second, when it held the time in seconds) changed no page, so its commit
        wrote nothing and answered "ready" from a database that could not be written.
        """
        with self._write() as tx:
            tx.execute(
                "INSERT INTO probe VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET at = probe.at + 1",
                (int(time.time()),),
            )


def _task(config: str, upload_key_hash: str | None, archive: int) -> StoredTask:
    return StoredTask(TaskConfig.from_dict(json.loads(config)), upload_key_hash, bool(archive))
