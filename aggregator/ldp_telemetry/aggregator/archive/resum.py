"""Re-sum a report archive with Dask: the batch path past one database.

    python -m ldp_telemetry.aggregator.archive ARCHIVE --task TASK --output sums.parquet python -m
    ldp_telemetry.aggregator.archive ARCHIVE --task TASK --output sums.parquet --workers 4 python -m
    ldp_telemetry.aggregator.archive ARCHIVE --task TASK --output sums.parquet --scheduler
    tcp://host:8786

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
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ldp_telemetry.aggregator.store.folding import fold_parts
from ldp_telemetry.aggregator.store.staging import columns
from ldp_telemetry.shared.mechanisms.base import Batch
from ldp_telemetry.shared.sums import RowSums

if TYPE_CHECKING:
    from distributed import Client  # the [archive] extra; imported where the job runs


@dataclass
class Partial:
    """The sums of some reports over the (bucket, slice, row) keys they touched, as arrays.

    ``keys`` (r, 3) int64 sorted by (bucket, slice, row), ``n`` (r,), ``counters`` (r, width):
    a few large arrays, cheap to send between Dask workers and to add.
    """

    keys: np.ndarray
    n: np.ndarray
    counters: np.ndarray

    @classmethod
    def of(cls, parts: list[tuple[int, int, RowSums]]) -> Partial:
        """Return the partial sums of folded parts (bucket, slice, RowSums), duplicates
        added."""
        if not parts:
            return cls(
                np.zeros((0, 3), np.int64), np.zeros(0, np.int64), np.zeros((0, 0), np.int64)
            )
        keys = np.concatenate(
            [
                np.column_stack([np.full(len(p.rows), b), np.full(len(p.rows), s), p.rows])
                for b, s, p in parts
            ]
        ).astype(np.int64)
        n = np.concatenate([p.n for _, _, p in parts]).astype(np.int64)
        counters = np.concatenate([p.table for _, _, p in parts]).astype(np.int64)
        return cls._summed(keys, n, counters)

    @classmethod
    def _summed(cls, keys: np.ndarray, n: np.ndarray, counters: np.ndarray) -> Partial:
        unique, index = np.unique(keys, axis=0, return_inverse=True)
        index = index.reshape(-1)
        total_n = np.zeros(len(unique), np.int64)
        np.add.at(total_n, index, n)
        total = np.zeros((len(unique), counters.shape[1]), np.int64)
        np.add.at(total, index, counters)
        return cls(unique, total_n, total)

    def __add__(self, other: Partial) -> Partial:
        """Return the sums of both sets of reports (integer addition, row by row)."""
        if not len(other.keys):
            return self
        if not len(self.keys):
            return other
        return Partial._summed(
            np.concatenate([self.keys, other.keys]),
            np.concatenate([self.n, other.n]),
            np.concatenate([self.counters, other.counters]),
        )


def fold_file(path: str) -> Partial:
    """Return the sums of one archive file (on a worker), a row group at a time."""
    import pyarrow.parquet as pq

    from ldp_telemetry.aggregator.archive.parquet import table_reports, task_of

    task = task_of(path)
    mechanism = task.mechanism_object
    parquet = pq.ParquetFile(path)
    total = Partial.of([])
    for group in range(parquet.num_row_groups):
        buckets, slices, batch = table_reports(task, parquet.read_row_group(group))
        parts = []
        for bucket, slice_index in np.unique(np.column_stack([buckets, slices]), axis=0):
            chosen = np.flatnonzero((buckets == bucket) & (slices == slice_index))
            parts += [
                (int(bucket), int(slice_index), part)
                for part in fold_parts(mechanism, _take(batch, chosen))
            ]
        total = total + Partial.of(parts)
    return total


def _take(batch: Batch, chosen: np.ndarray) -> Batch:
    """Return the reports ``chosen`` of a batch, as a batch of the same kind."""
    return (
        type(batch)(*(array[chosen] for array in columns(batch)))
        if not isinstance(batch, np.ndarray)
        else batch[chosen]
    )


def merge(left: Partial, right: Partial) -> Partial:
    """Return the sums of two disjoint sets of reports (what the tree of tasks runs)."""
    return left + right


def resum(files: Sequence[Path], client: Client) -> Partial:
    """Fold every file on the cluster and add the results pairwise; return the total."""
    futures = client.map(fold_file, [str(f) for f in files], pure=False)
    while len(futures) > 1:
        paired = [
            client.submit(merge, futures[i], futures[i + 1], pure=False)
            for i in range(0, len(futures) - 1, 2)
        ]
        futures = paired + ([futures[-1]] if len(futures) % 2 else [])
    if not futures:
        return Partial.of([])
    result: Partial = futures[0].result()
    return result


def run(
    archive: Path, task_id: str, output: Path, *, workers: int, scheduler: str | None
) -> tuple[int, int, float]:
    """Sum a task's archive into ``output``; return (reports, sums rows, seconds)."""
    import pyarrow.parquet as pq
    from dask.distributed import Client, LocalCluster

    from ldp_telemetry.aggregator.archive.parquet import archive_files, task_of, write_sums

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
    rows = [
        (int(key[0]), int(key[1]), int(key[2]), int(n), counters)
        for key, n, counters in zip(sums.keys, sums.n, sums.counters, strict=True)
    ]
    write_sums(task, rows, output)
    reports = sum(pq.ParquetFile(path).metadata.num_rows for path in files)
    return reports, len(rows), time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    """The command line: sum an archive into a sums file."""
    parser = argparse.ArgumentParser(
        prog="python -m ldp_telemetry.aggregator.archive",
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
