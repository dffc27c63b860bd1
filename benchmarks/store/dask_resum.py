"""Re-summing a report archive with Dask: time for 1 and 2 LocalCluster workers.

    python -m benchmarks.store.dask_resum [--reports 10000000] [--files 10] [--workers 1 2]

Writes an archive of privatized CMS reports (k = 2048, m = 1024, ε = 4; Zipf values) in the layout
``ldp-aggregator export --reports`` writes (``--files`` Parquet files of one day), then times
``python -m ldp_telemetry.aggregator.archive``'s job (LocalCluster start included) for each worker
count, and checks that every run gives the same sums and that they count every report. Generating
the archive is not timed. Target (issue 15): 10^7 reports in ≤ 60 s on 2 workers.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from ldp_telemetry.aggregator.archive.parquet import reports_table
from ldp_telemetry.aggregator.archive.resum import run
from ldp_telemetry.shared import TaskConfig

DAY = 86_400


def write_archive(folder: Path, reports: int, files: int, seed: int) -> TaskConfig:
    """Write ``reports`` privatized CMS reports as ``files`` Parquet files of one day."""
    task = TaskConfig.create(
        task_id="bench", mechanism="cms", epsilon=4.0, k=2048, m=1024, min_batch_size=1
    )
    rng = np.random.default_rng(seed)
    target = folder / "task_id=bench" / "day=2026-11-24"
    target.mkdir(parents=True)
    per_file = -(-reports // files)
    weights = np.arange(1, 10_001, dtype=float) ** -1.1
    for i in range(files):
        size = min(per_file, reports - i * per_file)
        values = [f"v{j}" for j in rng.choice(10_000, size=size, p=weights / weights.sum())]
        batch = task.mechanism_object.privatize_many(values, rng)
        buckets = np.full(size, 1_795_478_400, dtype=np.int64)  # 2026-11-24
        pq.write_table(reports_table(task, buckets, batch), target / f"part-{i:05d}.parquet")
    return task


def main() -> None:
    """Write the archive, time the job per worker count, print the rows."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reports", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ldp-dask-") as name:
        folder = Path(name)
        started = time.perf_counter()
        write_archive(folder / "archive", args.reports, args.files, args.seed)
        size = sum(f.stat().st_size for f in (folder / "archive").rglob("*.parquet"))
        print(
            f"archive: {args.reports:,} CMS reports (k=2048, m=1024) in {args.files} files, "
            f"{size / 2**20:,.0f} MiB, written in {time.perf_counter() - started:.0f} s"
        )
        results = []
        for workers in args.workers:
            output = folder / f"sums-{workers}.parquet"
            reports, rows, seconds = run(
                folder / "archive", "bench", output, workers=workers, scheduler=None
            )
            table = pq.read_table(output)
            total = int(np.sum(table.column("n").to_numpy()))
            assert reports == total == args.reports, (reports, total)
            results.append((workers, seconds, table))
            print(
                f"{workers} worker(s): {seconds:.1f} s, {reports / seconds:,.0f} reports/s, "
                f"{rows:,} sums rows"
            )
        first = results[0][2]
        assert all(r[2].equals(first) for r in results), "worker counts gave different sums"
        if len(results) > 1:
            print(
                f"speed-up {results[0][0]} -> {results[-1][0]} workers: "
                f"{results[0][1] / results[-1][1]:.2f}x; sums identical across runs"
            )


if __name__ == "__main__":
    main()
