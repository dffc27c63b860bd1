"""One fold of CMS reports spread over 20 slices, and of the same reports without dimensions,
on both stores: the CPU it takes (this process's and, for PostgreSQL, the server's).

    python -m benchmarks.store.sliced_fold [--reports 40000] [--folds 2]

A fresh database per store and task (SQLite file; PostgreSQL: pgserver's throwaway server),
a CMS task of ``make bench``'s shape (k = 2,048, m = 1,024) without dimensions and with 2
(20 slices, each report's slice drawn uniformly), ``--reports`` reports staged in uploads of
500 into one bucket and folded, ``--folds`` times (the second fold and later add to stored
rows: the steady state). The line per fold is its CPU seconds; the rows it rewrites are
``2 × Σ over slices of the rows the slice's reports touch`` (the bucket's and the roll-up's).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common.workload import zipf_values
from benchmarks.serving.http_ingest import DIMENSIONS, TASK_K
from benchmarks.store.writer import _postmaster, _server_ticks
from demo.postgres import PostgresServer
from ldp_telemetry.aggregator.store import StoredTask
from ldp_telemetry.aggregator.store.base import SqlStore
from ldp_telemetry.aggregator.store.postgres.backend import PostgresStore
from ldp_telemetry.aggregator.store.sqlite.backend import SqliteStore
from ldp_telemetry.shared import Envelope, TaskConfig, new_report_id

UPLOAD = 500
NO_FOLD = 1 << 40  # staged bytes: only fold_staged folds
TICK = 100.0  # clock ticks per second in /proc/<pid>/stat


def folds(
    store: SqlStore, server: Callable[[], float], dimensions: bool, reports: int, count: int
) -> list[tuple[float, float, int]]:
    """Return (this process's CPU s, the server's CPU s, rows rewritten) of each fold."""
    rng = np.random.default_rng(1)
    extra: dict[str, Any] = {"dimensions": DIMENSIONS} if dimensions else {}
    task = TaskConfig.create(task_id="t", mechanism="cms", epsilon=4.0, k=TASK_K, m=1024, **extra)
    store.create_task(StoredTask(task))
    bucket = task.floor_time(time.time())
    measured = []
    for _ in range(count):
        batch = task.mechanism_object.privatize_many(zipf_values(reports, rng), rng)
        slices = rng.integers(task.slice_count, size=reports)
        sent = [
            Envelope(new_report_id(), task.fingerprint, bucket, batch.report(i), int(slices[i]))
            for i in range(reports)
        ]
        for first in range(0, reports, UPLOAD):
            part = sent[first : first + UPLOAD]
            store.add_reports(task, part, [bucket + 10**6] * len(part))
        touched = len({(int(s), int(r)) for s, r in zip(slices, batch.rows, strict=True)})
        ours, theirs = time.process_time(), server()
        store.fold_staged(task)
        measured.append((time.process_time() - ours, server() - theirs, 2 * touched))
    return measured


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.store.sliced_fold")
    parser.add_argument("--reports", type=int, default=40_000)
    parser.add_argument("--folds", type=int, default=2)
    args = parser.parse_args(argv)
    postgres = PostgresServer()
    try:
        data = postgres.folder / "data"
        with tempfile.TemporaryDirectory(prefix="ldp-sliced-fold-") as folder:
            for dimensions in (False, True):
                for name in ("SQLite", "PostgreSQL"):
                    store: SqlStore
                    if name == "SQLite":
                        path = Path(folder) / f"{dimensions}.sqlite3"
                        store, server = SqliteStore(str(path), staged_bytes=NO_FOLD), lambda: 0.0
                    else:
                        store = PostgresStore(postgres.new_database(), staged_bytes=NO_FOLD)

                        def server() -> float:
                            return _server_ticks(_postmaster(data)) / TICK

                    store.initialize()
                    label = "20 slices" if dimensions else "no dimensions"
                    for i, (ours, theirs, rows) in enumerate(
                        folds(store, server, dimensions, args.reports, args.folds)
                    ):
                        print(
                            f"{name}, {label}, fold {i + 1} of {args.reports:,} reports: "
                            f"{ours:.2f} s CPU here + {theirs:.2f} s server, {rows:,} rows",
                            flush=True,
                        )
                    if isinstance(store, PostgresStore):
                        store.close()
    finally:
        postgres.stop()


if __name__ == "__main__":
    main()
