"""Shuffled batches a collector received: what both SQL backends record and read.

A shuffler (ldp_telemetry.shuffler) forwards a task's reports in batches; the collector keeps,
per batch, its bucket, how many distinct uploads it was drawn from (``size``: the n of the
shuffle accountant) and how many of its reports were admitted (``reports``). Estimates
compare the latter with the window's n to tell whether every report came through a shuffler.
"""

from __future__ import annotations

from ldp_telemetry.aggregator.store.interface import ShuffledBatch, ShuffledWindow
from ldp_telemetry.aggregator.store.sql import Tx


def record(tx: Tx, batch: ShuffledBatch) -> None:
    """Record a batch once: a retried batch (same id) changes nothing."""
    tx.execute(
        "INSERT INTO shuffled_batches (task_id, batch_id, bucket, size, reports) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (task_id, batch_id) DO NOTHING",
        (batch.task_id, batch.batch_id, batch.bucket, batch.size, batch.reports),
    )


def window(tx: Tx, task_id: str, start: int | None, end: int | None) -> ShuffledWindow:
    """Return the batches of buckets starting in [start, end) (None: unbounded)."""
    low = -(2**62) if start is None else start
    high = 2**62 if end is None else end
    ((batches, smallest, reports),) = list(
        tx.execute(
            "SELECT COUNT(*), MIN(size), COALESCE(SUM(reports), 0) FROM shuffled_batches "
            "WHERE task_id = ? AND bucket >= ? AND bucket < ?",
            (task_id, low, high),
        )
    )
    return ShuffledWindow(int(batches), None if smallest is None else int(smallest), int(reports))
