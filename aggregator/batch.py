"""Re-sum a report archive with Dask: the batch path past one database.

    python -m aggregator.batch ARCHIVE --task TASK --output sums.parquet
    python -m aggregator.batch ARCHIVE --task TASK --output sums.parquet --workers 4
    python -m aggregator.batch ARCHIVE --task TASK --output sums.parquet --scheduler tcp://host:8786

ARCHIVE is what ``ldp-aggregator export TASK --reports --output ARCHIVE`` wrote (Parquet,
partitioned by task and day). Each file is folded into integer sums on a Dask worker with
the mechanism's own fold (the collector's code), the per-file sums are added pairwise in
a tree, and the result is written as a sums file, bit-identical to the collector's sums
for the same reports. ``ldp-aggregator estimates TASK --sums sums.parquet`` (and
``heavy-hitters --sums``) answer from it without a database: new candidate lists,
longer windows, volumes no single database should hold.

By default the job starts a LocalCluster of ``--workers`` single-threaded processes on
this machine; ``--scheduler`` sends it to any running dask.distributed scheduler instead
(the workers must be able to read ARCHIVE's paths).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from aggregator.archive import archive_files, table_reports, task_of, write_sums
from aggregator.store.folding import fold_parts
from aggregator.store.staging import columns
from shared.mechanisms.base import Batch

# (bucket, row) -> (n, counters): the sums of some reports, only the rows they touched
SparseSums = dict[tuple[int, int], tuple[int, np.ndarray]]


def fold_file(path: str) -> SparseSums:
    """Return the sums of one archive file (on a worker), a row group at a time."""
    task = task_of(path)
    mechanism = task.mechanism_object
    sums: SparseSums = {}
    parquet = pq.ParquetFile(path)
    for group in range(parquet.num_row_groups):
        buckets, batch = table_reports(task, parquet.read_row_group(group))
        for bucket in np.unique(buckets):
            in_bucket = _take(batch, np.flatnonzero(buckets == bucket))
            for part in fold_parts(mechanism, in_bucket):
                for i, row in enumerate(part.rows):
                    _add(sums, (int(bucket), int(row)), int(part.n[i]), part.table[i])
    return sums


def _take(batch: Batch, chosen: np.ndarray) -> Batch:
    """Return the reports ``chosen`` of a batch, as a batch of the same kind."""
    return (
        type(batch)(*(array[chosen] for array in columns(batch)))
        if not isinstance(batch, np.ndarray)
        else batch[chosen]
    )


def _add(sums: SparseSums, key: tuple[int, int], n: int, counters: np.ndarray) -> None:
    held = sums.get(key)
    if held is None:
        sums[key] = (n, counters.astype(np.int64, copy=True))
    else:
        held[1][...] += counters
        sums[key] = (held[0] + n, held[1])


def merge(left: SparseSums, right: SparseSums) -> SparseSums:
    """Return the sums of two disjoint sets of reports (integer addition, row by row)."""
    if len(left) < len(right):
        left, right = right, left
    for key, (n, counters) in right.items():
        _add(left, key, n, counters)
    return left


def resum(files: Sequence[Path], client: object) -> SparseSums:
    """Fold every file on the cluster and add the results pairwise; return the total."""
    futures = client.map(fold_file, [str(f) for f in files], pure=False)  # type: ignore[attr-defined]
    while len(futures) > 1:
        paired = [
            client.submit(merge, futures[i], futures[i + 1], pure=False)  # type: ignore[attr-defined]
            for i in range(0, len(futures) - 1, 2)
        ]
        futures = paired + ([futures[-1]] if len(futures) % 2 else [])
    if not futures:
        return {}
    result: SparseSums = futures[0].result()
    return result


def run(
    archive: Path, task_id: str, output: Path, *, workers: int, scheduler: str | None
) -> tuple[int, int, float]:
    """Sum a task's archive into ``output``; return (reports, sums rows, seconds)."""
    from dask.distributed import Client, LocalCluster

    files = archive_files(archive, task_id)
    if not files:
        raise SystemExit(f"no archive files for task {task_id!r} under {archive}")
    task = task_of(files[0])
    for path in files[1:]:
        if task_of(path).fingerprint != task.fingerprint:
            raise SystemExit(f"{path} was written for another configuration of {task_id!r}")
    started = time.perf_counter()
    if scheduler:
        client = Client(scheduler)
        cluster = None
    else:
        cluster = LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        )
        client = Client(cluster)
    try:
        sums = resum(files, client)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    rows = [(b, r, n, counters) for (b, r), (n, counters) in sorted(sums.items())]
    write_sums(task, rows, output)
    reports = sum(pq.ParquetFile(path).metadata.num_rows for path in files)
    return reports, len(rows), time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    """The command line: sum an archive into a sums file."""
    parser = argparse.ArgumentParser(
        prog="python -m aggregator.batch",
        description=(__doc__ or "").split("\n\n")[0],
    )
    parser.add_argument("archive", type=Path, help="the folder export --reports wrote")
    parser.add_argument("--task", required=True, help="the task id to sum")
    parser.add_argument("--output", "-o", type=Path, required=True, help="sums file to write")
    parser.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes")
    parser.add_argument("--scheduler", default=None, help="a dask.distributed scheduler address")
    args = parser.parse_args(argv)
    reports, rows, seconds = run(
        args.archive, args.task, args.output, workers=args.workers, scheduler=args.scheduler
    )
    print(f"{reports} reports summed into {rows} sums rows in {seconds:.1f} s -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
