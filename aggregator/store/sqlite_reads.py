"""Reads of the SQLite store: one consistent snapshot of a task's sums.

A single-row mechanism's sums are loaded whole; a sketch's rows are streamed block by block
(:mod:`aggregator.store.streamed`) from the same read transaction, so memory depends on
the block, not on k or n, while writers go on (WAL).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from aggregator.store.interface import SumsView
from aggregator.store.streamed import StreamedSums
from shared import Sums, TaskConfig

COUNTER = np.dtype("<i8")
NO_LIMIT = (-(2**63), 2**63 - 1)


@contextmanager
def snapshot_sums(
    conn: sqlite3.Connection, task: TaskConfig, start: int | None, end: int | None
) -> Iterator[SumsView]:
    """Yield the sums over buckets starting in [start, end), read in one transaction."""
    low, high = _bounds(start, end)
    where = "WHERE task_id = ? AND bucket >= ? AND bucket < ?"
    conn.execute("BEGIN")  # one WAL snapshot for n and every row block; writers go on
    try:
        rows, width = task.mechanism_object.sums_shape
        if rows == 1:  # a single small row: load it whole
            yield _dense(conn, task, where, (task.task_id, low, high))
            return
        total = conn.execute(
            f"SELECT COALESCE(SUM(n), 0) FROM sums {where}", (task.task_id, low, high)
        ).fetchone()[0]
        buckets = [
            b
            for (b,) in conn.execute(
                f"SELECT DISTINCT bucket FROM sums {where}", (task.task_id, low, high)
            )
        ]
        yield StreamedSums(
            int(total),
            rows,
            width,
            lambda a, b: _row_block(conn, task.task_id, buckets, a, b, width),
        )
    finally:
        conn.execute("COMMIT")


def _dense(
    conn: sqlite3.Connection, task: TaskConfig, where: str, args: tuple[str, int, int]
) -> Sums:
    sums = task.mechanism_object.new_sums()
    for row, count, blob in conn.execute(f"SELECT row, n, counters FROM sums {where}", args):
        sums.n[row] += count
        sums.table[row] += np.frombuffer(blob, dtype=COUNTER)
    return sums


def _row_block(
    conn: sqlite3.Connection, task_id: str, buckets: list[int], start: int, stop: int, width: int
) -> np.ndarray:
    """Return rows [start, stop) summed over the buckets (index range scans, one per bucket)."""
    block = np.zeros((stop - start, width), dtype=np.int64)
    for bucket in buckets:
        for row, blob in conn.execute(
            "SELECT row, counters FROM sums WHERE task_id = ? AND bucket = ? AND row >= ? "
            "AND row < ?",
            (task_id, bucket, start, stop),
        ):
            block[row - start] += np.frombuffer(blob, dtype=COUNTER)
    return block


def _bounds(start: int | None, end: int | None) -> tuple[int, int]:
    return (NO_LIMIT[0] if start is None else start, NO_LIMIT[1] if end is None else end)
