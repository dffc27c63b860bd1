"""What dimensions cost ingest: staging and folding CMS reports spread over 20 slices.

    python -m benchmarks.store.sliced_ingest [--reports 300000] [--fold-slices 8,32]

A fresh SQLite store (``STAGED_BYTES`` 8 MiB) and a CMS task (k = 2,048, m = 1,024: the
``make bench`` HTTP task), without dimensions and with 2 (3 platforms × 4 versions: 20
slices with ``other``, each report's slice drawn uniformly). Uploads of 500 reports go in
through ``add_reports`` (the group commit's store call) with the folds they trigger, then
the rest is folded; this process's CPU per report is the cost (an estimate of the task's
totals every 50,000 reports is timed apart: what a read pays for the staged reports).
``--fold-slices``: the values of ``base.FOLD_SLICES`` tried for the task with dimensions
(1: the fold threshold before it grew with the slices; 8: before every slice counted).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common.workload import zipf_values
from benchmarks.serving.http_ingest import DIMENSIONS, TASK_K
from ldp_telemetry.aggregator.core.analysis import estimates
from ldp_telemetry.aggregator.core.analysis.query import Window
from ldp_telemetry.aggregator.store import StoredTask, base
from ldp_telemetry.aggregator.store.sqlite.backend import SqliteStore
from ldp_telemetry.shared import Envelope, TaskConfig, new_report_id

UPLOAD = 500
READ_EVERY = 50_000


def run(reports: int, dimensions: bool, fold_slices: int) -> str:
    """Return one row: CPU µs per report (staging and folds), the slowest upload, reads."""
    base.FOLD_SLICES = fold_slices
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory(prefix="ldp-sliced-") as folder:
        store = SqliteStore(str(Path(folder) / "ingest.sqlite3"), staged_bytes=8 << 20)
        store.initialize()
        extra: dict[str, Any] = {"dimensions": DIMENSIONS} if dimensions else {}
        task = TaskConfig.create(
            task_id="t", mechanism="cms", epsilon=4.0, k=TASK_K, m=1024, **extra
        )
        store.create_task(StoredTask(task))
        batch = task.mechanism_object.privatize_many(zipf_values(reports, rng), rng)
        bucket = task.floor_time(time.time())
        slices = rng.integers(task.slice_count, size=reports)
        sent = [
            Envelope(new_report_id(), task.fingerprint, bucket, batch.report(i), int(slices[i]))
            for i in range(reports)
        ]
        reads, slowest = [], 0.0
        started = time.process_time()
        for first in range(0, reports, UPLOAD):
            part = sent[first : first + UPLOAD]
            wall = time.perf_counter()
            store.add_reports(task, part, [bucket + 10**6] * len(part))
            slowest = max(slowest, time.perf_counter() - wall)
            if first and first % READ_EVERY == 0:
                read = time.process_time()
                estimates.answer(task, ["a", "b"], Window(), store)
                reads.append(time.process_time() - read)
        store.fold_staged(task)
        spent = time.process_time() - started - sum(reads)
    label = f"20 slices, FOLD_SLICES = {fold_slices}" if dimensions else "no dimensions"
    return (
        f"| {label} | {spent / reports * 1e6:.1f} | {reports / spent:,.0f} "
        f"| {slowest * 1e3:.0f} | {np.median(reads) * 1e3:.0f} / {max(reads) * 1e3:.0f} |"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.store.sliced_ingest")
    parser.add_argument("--reports", type=int, default=300_000)
    parser.add_argument("--fold-slices", default="8,32")
    args = parser.parse_args(argv)
    print(
        "| task | CPU µs per report (staging + folds) | reports/s of CPU | slowest upload (ms) "
        "| estimate of the totals, median / max CPU (ms) |"
    )
    print("|:---|---:|---:|---:|---:|")
    print(run(args.reports, False, base.FOLD_SLICES), flush=True)
    for value in args.fold_slices.split(","):
        print(run(args.reports, True, int(value)), flush=True)


if __name__ == "__main__":
    main()
