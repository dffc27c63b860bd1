"""Reads of a SQL store's sums, backend-neutral: one task's slices from one snapshot.

A task's reports are summed per slice (a combination of its public dimensions; 0 without
them). One read (:class:`SnapshotSlices`) serves a whole answer through one transaction:
the reports per slice, the totals (every slice) and any set of slices (a row of a
breakdown), each exactly the sum of its slices' stored rows and staged reports.

A single-row mechanism's sums of every slice are read at once (one query, rows summed per
slice in numpy), so a set of slices costs an addition of small arrays. A sketch's rows are
streamed block by block (:mod:`ldp_telemetry.aggregator.store.streamed`) through the same
transaction, so memory depends on the block, not on k or n; a read over every stored bucket
of a task whose roll-up is ready reads the roll-up instead
(:mod:`ldp_telemetry.aggregator.store.rollup`): one row per table row, not one per bucket. The
reports still staged in that snapshot are read once (one query) and added in memory
(:mod:`ldp_telemetry.aggregator.store.staged_view`): a read writes nothing. The caller opens the
snapshot (SQLite: a read transaction on the WAL; PostgreSQL: REPEATABLE READ) and closes it
after the ``with`` block.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Collection

import numpy as np

from ldp_telemetry.aggregator.store import counters, rollup
from ldp_telemetry.aggregator.store.interface import SumsView
from ldp_telemetry.aggregator.store.sql import (
    Tx,
    chosen_slices,
    in_clause,
    sum_buckets,
)
from ldp_telemetry.aggregator.store.staged_view import StagedRows
from ldp_telemetry.aggregator.store.staging import unpack
from ldp_telemetry.aggregator.store.streamed import StreamedSums
from ldp_telemetry.shared import Sums, TaskConfig
from ldp_telemetry.shared.mechanisms.base import Mechanism

NO_LIMIT = (-(2**63), 2**63 - 1)
DENSE_BLOCK = 4096  # stored rows of a single-row mechanism summed at once
Where = tuple[str, tuple[str, int, int]]  # "WHERE ..." over a task's window, and its arguments
Staged = tuple[int, bytes]  # a staged batch: (bucket, packed reports)


class SnapshotSlices:
    """Every slice's sums of a task over buckets starting in [start, end), from one snapshot.

    ``counts``: the reports per slice (only slices that have some, in index order; their
    sum is the window's n). :meth:`sums` gives the sums of any set of slices.
    """

    def __init__(self, tx: Tx, task: TaskConfig, start: int | None, end: int | None) -> None:
        self._tx, self._task = tx, task
        low, high = _bounds(start, end)
        self._where: Where = (
            "WHERE task_id = ? AND bucket >= ? AND bucket < ?",
            (task.task_id, low, high),
        )
        mechanism = task.mechanism_object
        self._staged = _staged_by_slice(tx, self._where)
        self._dense: _DenseSlices | None = None
        if mechanism.sums_shape[0] == 1:  # a single small row per slice: all read at once
            self._dense = _DenseSlices(tx, mechanism, self._where, self._staged)
            counts = self._dense.counts()
        else:
            self._buckets = stored_buckets(tx, task.task_id, low, high)
            self._rolled_up = rollup.covers(tx, task.task_id, low, high)
            counts = _stored_counts(tx, task.task_id, self._where, self._rolled_up)
            for index, rows in self._staged.items():
                staged = sum(len(unpack(mechanism, [blob])) for _, blob in rows)
                counts[index] = counts.get(index, 0) + staged
        self.counts = {index: count for index, count in sorted(counts.items()) if count}

    def sums(self, slices: Collection[int] | None = None) -> SumsView:
        """Return the sums of ``slices`` (None: every slice, the task's totals).

        Raises ValueError for an index the task does not have.
        """
        chosen = chosen_slices(self._task, slices)
        if self._dense is not None:
            return self._dense.sums(chosen)
        picked = (
            self._staged.values() if chosen is None else (self._staged.get(i, []) for i in chosen)
        )
        # the staged reports of these slices only, folded when the estimator reads their rows
        staged = StagedRows(self._task.mechanism_object, itertools.chain.from_iterable(picked))
        total = sum(self.counts.values() if chosen is None else map(self._count, chosen))
        clause = in_clause(self._task, chosen)
        return self._streamed(clause, staged, total)

    def _count(self, index: int) -> int:
        return self.counts.get(index, 0)

    def _streamed(self, clause: str, staged: StagedRows, total: int) -> StreamedSums:
        """Return a sketch's sums of the slices of ``clause``, read as the estimator asks."""
        tx, task_id = self._tx, self._task.task_id
        rows, width = self._task.mechanism_object.sums_shape
        used = len(staged.buckets.union(self._buckets))
        if self._rolled_up:  # every stored bucket: read their sum

            def block(start: int, stop: int) -> np.ndarray:
                found = rollup.row_block(tx, task_id, start, stop, width, clause)
                staged.add_block(found, start)
                return found

            def counts() -> np.ndarray:
                n = rollup.row_counts(tx, task_id, rows, clause)
                staged.add_n(n)
                return n

            return StreamedSums(lambda: total, rows, width, block, counts, used)
        buckets, (where, args) = self._buckets, self._where

        def bucket_block(start: int, stop: int) -> np.ndarray:
            _, found = sum_buckets(tx, task_id, buckets, start, stop, width, clause)
            staged.add_block(found, start)
            return found

        def bucket_counts() -> np.ndarray:
            n = np.zeros(rows, dtype=np.int64)
            for row, count in tx.execute(
                f"SELECT row, SUM(n) FROM sums {where}{clause} GROUP BY row", args
            ):
                n[row] = count  # summed over the slices read
            staged.add_n(n)
            return n

        return StreamedSums(lambda: total, rows, width, bucket_block, bucket_counts, used)


class _DenseSlices:
    """A single-row mechanism's sums of every slice holding reports in a window: one query
    of stored rows (summed a block of rows at a time), the staged reports added."""

    def __init__(
        self, tx: Tx, mechanism: Mechanism, where: Where, staged: dict[int, list[Staged]]
    ) -> None:
        self._empty = mechanism.new_sums()
        width = mechanism.sums_shape[1]
        found: dict[int, tuple[int, np.ndarray]] = {}  # per slice: n and its counters

        def add(index: int, n: int, table: np.ndarray) -> None:
            old = found.get(index)
            found[index] = (n, table) if old is None else (old[0] + n, old[1] + table)

        rows = tx.execute(f"SELECT slice, n, counters FROM sums {where[0]}", where[1])
        while block := list(itertools.islice(rows, DENSE_BLOCK)):
            at = np.fromiter((s for s, _, _ in block), dtype=np.int64, count=len(block))
            n = np.fromiter((c for _, c, _ in block), dtype=np.int64, count=len(block))
            decoded = counters.decode([b for _, _, b in block], width)
            order = np.argsort(at, kind="stable")
            present, first = np.unique(at[order], return_index=True)
            n_sums = np.add.reduceat(n[order], first)
            tables = np.add.reduceat(decoded[order], first, axis=0)
            for index, count, table in zip(present.tolist(), n_sums, tables, strict=True):
                add(index, int(count), table)
        for index, batches in staged.items():
            n_row, table_row = np.zeros(1, np.int64), np.zeros((1, width), np.int64)
            StagedRows(mechanism, batches).add_dense(n_row, table_row)
            add(index, int(n_row[0]), table_row[0])
        self.index = {index: position for position, index in enumerate(sorted(found))}
        self.n = np.array([found[i][0] for i in self.index], dtype=np.int64)
        self.table = np.zeros((len(found), width), dtype=np.int64)
        for index, position in self.index.items():
            self.table[position] = found[index][1]

    def counts(self) -> dict[int, int]:
        """Return the reports per slice holding some stored or staged rows."""
        return {index: int(self.n[position]) for index, position in self.index.items()}

    def sums(self, chosen: list[int] | None) -> Sums:
        """Return the sums of the ``chosen`` slices (None: every slice)."""
        at = (
            list(self.index.values())
            if chosen is None
            else [self.index[i] for i in chosen if i in self.index]
        )
        if len(at) == 1:  # one slice (a row of a breakdown by every dimension): its own sums
            n, table = self.n[at[0]], self.table[at[0]].copy()
        else:
            n, table = self.n[at].sum(), self.table[at].sum(axis=0)
        sums = self._empty.__class__.__new__(self._empty.__class__)  # the empty one's copy,
        sums.__dict__.update(self._empty.__dict__)  # given these arrays (no zeros added to)
        sums.n, sums.table = np.array([n], dtype=np.int64), table.reshape(1, -1)
        return sums


def slice_counts(tx: Tx, task: TaskConfig, start: int | None, end: int | None) -> dict[int, int]:
    """Return the reports per slice over buckets starting in [start, end), staged ones
    included: only slices that have some, in slice order (no counters read)."""
    low, high = _bounds(start, end)
    where: Where = ("WHERE task_id = ? AND bucket >= ? AND bucket < ?", (task.task_id, low, high))
    sketch = task.mechanism_object.sums_shape[0] > 1
    rolled_up = sketch and rollup.covers(tx, task.task_id, low, high)
    counts = _stored_counts(tx, task.task_id, where, rolled_up)
    mechanism = task.mechanism_object
    for slice_index, data in tx.execute(f"SELECT slice, data FROM staged {where[0]}", where[1]):
        index = int(slice_index)
        counts[index] = counts.get(index, 0) + len(unpack(mechanism, [bytes(data)]))
    return {index: count for index, count in sorted(counts.items()) if count}


def _stored_counts(tx: Tx, task_id: str, where: Where, rolled_up: bool) -> dict[int, int]:
    """Return the folded reports per slice (one ``GROUP BY slice``; from the roll-up when it
    covers the window: one row per table row)."""
    if rolled_up:
        stored = tx.execute(
            "SELECT slice, SUM(n) FROM rollup WHERE task_id = ? GROUP BY slice", (task_id,)
        )
    else:
        stored = tx.execute(f"SELECT slice, SUM(n) FROM sums {where[0]} GROUP BY slice", where[1])
    return {int(index): int(count) for index, count in stored}


def _staged_by_slice(tx: Tx, where: Where) -> dict[int, list[Staged]]:
    """Return the window's staged batches per slice (one query), in staging order."""
    found: defaultdict[int, list[Staged]] = defaultdict(list)
    for slice_index, bucket, data in tx.execute(
        f"SELECT slice, bucket, data FROM staged {where[0]} ORDER BY id", where[1]
    ):
        found[int(slice_index)].append((int(bucket), bytes(data)))
    return dict(found)


def stored_buckets(tx: Tx, task_id: str, low: int, high: int) -> list[int]:
    """Return the stored buckets in [low, high): one index seek per bucket.

    A sums row (a sketch row's counters) fills a page, so a scan of the table for its
    distinct buckets would read every row's page; seeking the next bucket reads a few.
    """
    found: list[int] = []
    while True:
        ((bucket,),) = tx.execute(
            "SELECT MIN(bucket) FROM sums WHERE task_id = ? AND bucket >= ? AND bucket < ?",
            (task_id, low, high),
        )
        if bucket is None:
            return found
        found.append(int(bucket))
        low = int(bucket) + 1


def _bounds(start: int | None, end: int | None) -> tuple[int, int]:
    return (NO_LIMIT[0] if start is None else start, NO_LIMIT[1] if end is None else end)
