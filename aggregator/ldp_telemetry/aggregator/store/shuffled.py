"""Shuffled batches a collector received: what both SQL backends record and read.

A shuffler (ldp_telemetry.shuffler) forwards a task's reports in batches; the collector keeps,
per batch, its bucket, how many distinct uploads it was drawn from (``size``: the n of the
shuffle accountant) and how many of its reports were admitted (``reports``). Estimates
compare the latter with the window's n to tell whether every report came through a shuffler.
Per slice of a task's public dimensions it keeps the slice's own n (``slice_counts``, JSON
{"index": n}): under a shuffler a slice's devices hide only among the slice's reports.
"""

from __future__ import annotations

import json

from ldp_telemetry.aggregator.store.interface import ShuffledBatch, ShuffledWindow
from ldp_telemetry.aggregator.store.sql import Tx


def record(tx: Tx, batch: ShuffledBatch) -> None:
    """Record a batch once: a retried batch (same id) changes nothing."""
    tx.execute(
        "INSERT INTO shuffled_batches (task_id, batch_id, bucket, size, reports, slice_counts) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (task_id, batch_id) DO NOTHING",
        (
            batch.task_id,
            batch.batch_id,
            batch.bucket,
            batch.size,
            batch.reports,
            json.dumps({str(i): int(n) for i, n in sorted(batch.slice_counts.items())}),
        ),
    )


def window(tx: Tx, task_id: str, start: int | None, end: int | None) -> ShuffledWindow:
    """Return the batches of buckets starting in [start, end) (None: unbounded)."""
    low = -(2**62) if start is None else start
    high = 2**62 if end is None else end
    rows = list(
        tx.execute(
            "SELECT size, reports, slice_counts, bucket FROM shuffled_batches "
            "WHERE task_id = ? AND bucket >= ? AND bucket < ? ORDER BY bucket, batch_id",
            (task_id, low, high),
        )
    )
    sizes = tuple(int(size) for size, _, _, _ in rows)
    return ShuffledWindow(
        len(rows),
        min(sizes) if sizes else None,
        sum(int(reports) for _, reports, _, _ in rows),
        tuple({int(i): int(n) for i, n in json.loads(counts).items()} for _, _, counts, _ in rows),
        tuple(int(bucket) for _, _, _, bucket in rows),
        sizes,
    )
