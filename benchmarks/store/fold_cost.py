"""What the roll-up costs folds: one fold of staged reports, with and without its writes.

python -m benchmarks.store.fold_cost                    # 30,000 reports per fold
python -m benchmarks.store.fold_cost --reports 2000

Stages ``--reports`` privatized reports of one bucket in a fresh SQLite store (cms, then
hh, k = m = 1,024: the dashboard benchmark's tasks) and times ``fold_staged``, three folds
per store, best of two stores; "without" skips the roll-up's writes (the fold as it was
before the roll-up), same reports.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.dashboard.render import task_params, values
from ldp_telemetry.aggregator.store import StoredTask, sql
from ldp_telemetry.aggregator.store.sqlite.backend import SqliteStore
from ldp_telemetry.shared import Envelope, TaskConfig, new_report_id
from ldp_telemetry.shared.sums import RowSums

FOLDS = 3
MERGE = sql.merge_rows


def _buckets_only(
    tx: sql.Tx, table: str, key: tuple[str, ...], values: tuple[Any, ...], new: RowSums
) -> None:
    # merge_rows' own signature, so that it can stand in for it
    if table != "rollup":
        MERGE(tx, table, key, values, new)


def fold_seconds(kind: int, reports: int, rolled_up: bool) -> float:
    """Return the mean seconds of one fold of ``reports`` staged reports."""
    sql.merge_rows = MERGE if rolled_up else _buckets_only
    rng = np.random.default_rng(3)
    try:
        with tempfile.TemporaryDirectory(prefix="ldp-fold-bench-") as folder:
            store = SqliteStore(str(Path(folder) / "fold.sqlite3"), staged_bytes=1 << 40)
            store.initialize()
            task = TaskConfig.create(**task_params(kind, 0))
            store.create_task(StoredTask(task))
            bucket, spent = task.floor_time(time.time()), 0.0
            for _ in range(FOLDS):
                batch: Any = task.mechanism_object.privatize_many(values(task, reports, rng), rng)
                sent = [
                    Envelope(new_report_id(), task.fingerprint, bucket, batch.report(i))
                    for i in range(reports)
                ]
                store.add_reports(task, sent, [bucket + 10**6] * reports)
                started = time.perf_counter()
                store.fold_staged(task)
                spent += time.perf_counter() - started
            return spent / FOLDS
    finally:
        sql.merge_rows = MERGE


def main() -> None:
    """Print the fold time of each sketch task with and without the roll-up."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=30_000)
    args = parser.parse_args()
    for kind, name in ((0, "cms k = m = 1024"), (1, "hh k = m = 1024")):
        without = min(fold_seconds(kind, args.reports, False) for _ in range(2))
        with_it = min(fold_seconds(kind, args.reports, True) for _ in range(2))
        print(
            f"{name}, {args.reports:,} reports per fold: without the roll-up "
            f"{without * 1000:.1f} ms, with it {with_it * 1000:.1f} ms"
        )


if __name__ == "__main__":
    main()
