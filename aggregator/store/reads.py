"""Reads of a SQL store's sums, backend-neutral: one task's sums from one snapshot.

A single-row mechanism's sums are loaded whole; a sketch's rows are streamed block by block
(:mod:`aggregator.store.streamed`) through the same transaction, so memory depends on the
block, not on k or n. The caller opens the snapshot (SQLite: a read transaction on the
WAL; PostgreSQL: REPEATABLE READ) and closes it after the ``with`` block.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from aggregator.store.interface import SumsView
from aggregator.store.sql import COUNTER, Tx
from aggregator.store.streamed import StreamedSums
from shared import Sums, TaskConfig

NO_LIMIT = (-(2**63), 2**63 - 1)


@contextmanager
def snapshot_sums(
    tx: Tx, task: TaskConfig, start: int | None, end: int | None
) -> Iterator[SumsView]:
    """Yield the sums over buckets starting in [start, end), read through ``tx``."""
    low, high = _bounds(start, end)
    where = "WHERE task_id = ? AND bucket >= ? AND bucket < ?"
    rows, width = task.mechanism_object.sums_shape
    if rows == 1:  # a single small row: load it whole
        yield _dense(tx, task, where, (task.task_id, low, high))
        return
    args = (task.task_id, low, high)
    buckets = _buckets(tx, task.task_id, low, high)
    yield StreamedSums(
        lambda: _total(tx, where, args),
        rows,
        width,
        lambda a, b: _row_block(tx, task.task_id, buckets, a, b, width),
        lambda: _row_counts(tx, where, args, rows),
        len(buckets),
    )


def _buckets(tx: Tx, task_id: str, low: int, high: int) -> list[int]:
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


def _dense(tx: Tx, task: TaskConfig, where: str, args: tuple[str, int, int]) -> Sums:
    sums = task.mechanism_object.new_sums()
    for row, count, blob in tx.execute(f"SELECT row, n, counters FROM sums {where}", args):
        sums.n[row] += count
        sums.table[row] += np.frombuffer(blob, dtype=COUNTER)
    return sums


def _row_counts(tx: Tx, where: str, args: tuple[str, int, int], rows: int) -> np.ndarray:
    """Return each row's report count over the window (the n column only: no counters)."""
    n = np.zeros(rows, dtype=np.int64)
    for row, count in tx.execute(f"SELECT row, SUM(n) FROM sums {where} GROUP BY row", args):
        n[row] = count
    return n


def _row_block(
    tx: Tx, task_id: str, buckets: list[int], start: int, stop: int, width: int
) -> np.ndarray:
    """Return rows [start, stop) summed over the buckets (index range scans, one per bucket)."""
    block = np.zeros((stop - start, width), dtype=np.int64)
    for bucket in buckets:
        for row, blob in tx.execute(
            "SELECT row, counters FROM sums WHERE task_id = ? AND bucket = ? AND row >= ? "
            "AND row < ?",
            (task_id, bucket, start, stop),
        ):
            block[row - start] += np.frombuffer(blob, dtype=COUNTER)
    return block


def _bounds(start: int | None, end: int | None) -> tuple[int, int]:
    return (NO_LIMIT[0] if start is None else start, NO_LIMIT[1] if end is None else end)
