"""Reads of a SQL store's sums, backend-neutral: one task's sums from one snapshot.

A single-row mechanism's sums are loaded whole; a sketch's rows are streamed block by block
(:mod:`ldp_telemetry.aggregator.store.streamed`) through the same transaction, so memory depends on
the block, not on k or n. A read over every stored bucket of a task whose roll-up is ready reads the
roll-up instead (:mod:`ldp_telemetry.aggregator.store.rollup`): one row per table row, not one per
bucket. The reports still staged in that snapshot are added in memory
(:mod:`ldp_telemetry.aggregator.store.staged_view`): a read writes nothing. The caller opens the
snapshot (SQLite: a read transaction on the WAL; PostgreSQL: REPEATABLE READ) and closes it after
the ``with`` block. A read may take some of a task's slices (its public dimensions'
combinations; None: all, the task's totals); :func:`slice_counts` says how many reports
each slice holds.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterator
from contextlib import contextmanager

import numpy as np

from ldp_telemetry.aggregator.store import rollup
from ldp_telemetry.aggregator.store.interface import SumsView
from ldp_telemetry.aggregator.store.sql import COUNTER, Tx, slice_clause, sum_buckets
from ldp_telemetry.aggregator.store.staged_view import StagedRows
from ldp_telemetry.aggregator.store.staging import unpack
from ldp_telemetry.aggregator.store.streamed import StreamedSums
from ldp_telemetry.shared import Sums, TaskConfig

NO_LIMIT = (-(2**63), 2**63 - 1)


@contextmanager
def snapshot_sums(
    tx: Tx,
    task: TaskConfig,
    start: int | None,
    end: int | None,
    slices: Collection[int] | None = None,
) -> Iterator[SumsView]:
    """Yield the sums over buckets starting in [start, end) and the given slices (None:
    all), read through ``tx``."""
    low, high = _bounds(start, end)
    chosen = slice_clause(task, slices)
    where = f"WHERE task_id = ? AND bucket >= ? AND bucket < ?{chosen}"
    args = (task.task_id, low, high)
    staged = StagedRows(
        task.mechanism_object,
        tx.execute(f"SELECT bucket, data FROM staged {where} ORDER BY id", args),
    )
    rows, width = task.mechanism_object.sums_shape
    if rows == 1:  # a single small row: load it whole
        yield _dense(tx, task, where, args, staged)
        return
    buckets = stored_buckets(tx, task.task_id, low, high)
    used = len(staged.buckets.union(buckets))
    if rollup.covers(tx, task.task_id, low, high):  # every stored bucket: read their sum
        yield _rolled_up(tx, task.task_id, rows, width, staged, used, chosen)
        return
    yield StreamedSums(
        lambda: _total(tx, where, args) + staged.total,
        rows,
        width,
        lambda a, b: _row_block(tx, task.task_id, buckets, a, b, width, staged, chosen),
        lambda: _row_counts(tx, where, args, rows, staged),
        used,
    )


def slice_counts(tx: Tx, task: TaskConfig, start: int | None, end: int | None) -> dict[int, int]:
    """Return the reports per slice over buckets starting in [start, end), staged ones
    included: only slices that have some, in slice order."""
    low, high = _bounds(start, end)
    where = "WHERE task_id = ? AND bucket >= ? AND bucket < ?"
    args = (task.task_id, low, high)
    counts: defaultdict[int, int] = defaultdict(int)
    rows = task.mechanism_object.sums_shape[0]
    if rows > 1 and rollup.covers(tx, task.task_id, low, high):  # one row per table row
        stored = tx.execute(
            "SELECT slice, SUM(n) FROM rollup WHERE task_id = ? GROUP BY slice", (task.task_id,)
        )
    else:
        stored = tx.execute(f"SELECT slice, SUM(n) FROM sums {where} GROUP BY slice", args)
    for slice_index, count in stored:
        counts[int(slice_index)] += int(count)
    mechanism = task.mechanism_object
    for slice_index, data in tx.execute(f"SELECT slice, data FROM staged {where}", args):
        counts[int(slice_index)] += len(unpack(mechanism, [bytes(data)]))
    return {index: count for index, count in sorted(counts.items()) if count}


def _rolled_up(
    tx: Tx, task_id: str, rows: int, width: int, staged: StagedRows, buckets: int, chosen: str
) -> StreamedSums:
    """Return streamed sums read from the task's roll-up (plus what is staged)."""

    def block(start: int, stop: int) -> np.ndarray:
        found = rollup.row_block(tx, task_id, start, stop, width, chosen)
        staged.add_block(found, start)
        return found

    def counts() -> np.ndarray:
        n = rollup.row_counts(tx, task_id, rows, chosen)
        staged.add_n(n)
        return n

    return StreamedSums(
        lambda: rollup.total(tx, task_id, chosen) + staged.total,
        rows,
        width,
        block,
        counts,
        buckets,
    )


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


def _total(tx: Tx, where: str, args: tuple[str, int, int]) -> int:
    """Return the number of reports in the window (reads every row's n)."""
    ((total,),) = tx.execute(f"SELECT COALESCE(SUM(n), 0) FROM sums {where}", args)
    return int(total)


def _dense(
    tx: Tx, task: TaskConfig, where: str, args: tuple[str, int, int], staged: StagedRows
) -> Sums:
    sums = task.mechanism_object.new_sums()
    for row, count, blob in tx.execute(f"SELECT row, n, counters FROM sums {where}", args):
        sums.n[row] += count
        sums.table[row] += np.frombuffer(blob, dtype=COUNTER)
    staged.add_dense(sums.n, sums.table)
    return sums


def _row_counts(
    tx: Tx, where: str, args: tuple[str, int, int], rows: int, staged: StagedRows
) -> np.ndarray:
    """Return each row's report count over the window (the n column only: no counters)."""
    n = np.zeros(rows, dtype=np.int64)
    for row, count in tx.execute(f"SELECT row, SUM(n) FROM sums {where} GROUP BY row", args):
        n[row] = count  # summed over the slices read
    staged.add_n(n)
    return n


def _row_block(
    tx: Tx,
    task_id: str,
    buckets: list[int],
    start: int,
    stop: int,
    width: int,
    staged: StagedRows,
    chosen: str,
) -> np.ndarray:
    """Return rows [start, stop) summed over the buckets and the ``chosen`` slices (index
    range scans, one per bucket and slice)."""
    _, block = sum_buckets(tx, task_id, buckets, start, stop, width, chosen)
    staged.add_block(block, start)
    return block


def _bounds(start: int | None, end: int | None) -> tuple[int, int]:
    return (NO_LIMIT[0] if start is None else start, NO_LIMIT[1] if end is None else end)
