"""The roll-up: every bucket's sums of a sketch task added up, one stored row per table row.

A read over all of a task's buckets (heavy-hitter discovery, a whole-range estimate) would
otherwise read one row per bucket: 24 hourly buckets of an hh task (k = 1,024, four
levels, m = 1,024) are 24 × 4,096 rows of 8 KiB, 768 MiB read per pass over the levels.
The roll-up holds the same integer sums in 4,096 rows.

Every fold (:func:`ldp_telemetry.aggregator.store.sql.fold_into_sums`) adds what it adds to a
bucket's rows to the roll-up's rows too, in the same transaction, so a snapshot's roll-up always
equals the sum of its buckets. A task is ``rollup_ready`` when its roll-up holds every fold: from
its creation on, or once :func:`build` has added up its buckets (a task that had sums before the
roll-up existed, on its first read). Rows are kept per slice, as the buckets' are (a task's
public dimensions, :mod:`ldp_telemetry.shared.dimensions`): a read names the slices it sums
(``chosen``, a :func:`~ldp_telemetry.aggregator.store.sql.slice_clause`). Single-row
mechanisms have none: their sums are small and read whole. Nothing deletes a bucket's sums
today; whatever comes to delete them must rebuild the task's roll-up (or drop its
``rollup_ready`` row) in the same transaction.
"""

from __future__ import annotations

import numpy as np

from ldp_telemetry.aggregator.store import counters
from ldp_telemetry.aggregator.store.sql import Tx, add_at, sum_buckets

BUILD_ROWS = 4096  # rows added up at once while building: 32 MiB at m = 1,024


def is_ready(tx: Tx, task_id: str) -> bool:
    """Return whether the task's roll-up holds every fold."""
    return any(tx.execute("SELECT 1 FROM rollup_ready WHERE task_id = ?", (task_id,)))


def mark_ready(tx: Tx, task_id: str) -> None:
    """Record that a new task's (empty) roll-up holds every fold."""
    tx.execute("INSERT INTO rollup_ready VALUES (?) ON CONFLICT (task_id) DO NOTHING", (task_id,))


def build(tx: Tx, task_id: str, rows: int, width: int, buckets: list[int]) -> None:
    """Replace the task's roll-up by the sum of its stored buckets, and mark it ready.

    The caller holds what keeps folds of the task out until ``tx`` commits.
    """
    tx.execute("DELETE FROM rollup WHERE task_id = ?", (task_id,))
    slices = [
        int(s)
        for (s,) in tx.execute("SELECT DISTINCT slice FROM sums WHERE task_id = ?", (task_id,))
    ]
    for slice_index in slices:
        for start in range(0, rows, BUILD_ROWS):
            stop = min(rows, start + BUILD_ROWS)
            only = f" AND slice = {slice_index}"
            n, block = sum_buckets(tx, task_id, buckets, start, stop, width, only)
            hit = np.flatnonzero(n)
            tx.executemany(
                "INSERT INTO rollup (task_id, slice, row, n, counters) VALUES (?, ?, ?, ?, ?)",
                [
                    (task_id, slice_index, start + int(i), int(n[i]), blob)
                    for i, blob in zip(hit, counters.encode(block[hit]), strict=True)
                ],
            )
    mark_ready(tx, task_id)


def covers(tx: Tx, task_id: str, low: int, high: int) -> bool:
    """Return whether the roll-up answers a read of buckets in [low, high): it is ready
    and no stored bucket of the task lies outside (two index seeks)."""
    outside = tx.execute(
        "SELECT 1 FROM sums WHERE task_id = ? AND bucket < ? LIMIT 1", (task_id, low)
    )
    if any(outside):
        return False
    after = tx.execute(
        "SELECT 1 FROM sums WHERE task_id = ? AND bucket >= ? LIMIT 1", (task_id, high)
    )
    return not any(after) and is_ready(tx, task_id)


def total(tx: Tx, task_id: str, chosen: str = "") -> int:
    """Return the number of reports folded into the task's ``chosen`` slices."""
    ((found,),) = tx.execute(
        f"SELECT COALESCE(SUM(n), 0) FROM rollup WHERE task_id = ?{chosen}", (task_id,)
    )
    return int(found)


def row_counts(tx: Tx, task_id: str, rows: int, chosen: str = "") -> np.ndarray:
    """Return each row's folded report count, summed over the ``chosen`` slices."""
    n = np.zeros(rows, dtype=np.int64)
    for row, count in tx.execute(
        f"SELECT row, SUM(n) FROM rollup WHERE task_id = ?{chosen} GROUP BY row", (task_id,)
    ):
        n[row] = count
    return n


def row_block(
    tx: Tx, task_id: str, start: int, stop: int, width: int, chosen: str = ""
) -> np.ndarray:
    """Return the folded rows [start, stop) summed over the ``chosen`` slices (one index
    range scan per slice)."""
    block = np.zeros((stop - start, width), dtype=np.int64)
    found = list(
        tx.execute(
            f"SELECT row, counters FROM rollup WHERE task_id = ?{chosen} AND row >= ? AND row < ?",
            (task_id, start, stop),
        )
    )
    if found:
        at = np.fromiter((row - start for row, _ in found), dtype=np.int64, count=len(found))
        decoded = counters.decode([b for _, b in found], width)
        add_at(block, at, decoded, len(np.unique(at)) == len(at))
    return block
