"""The report archive and sums files as Parquet: what the batch path reads and writes.

A task created with ``archive`` keeps every privatized report it accepted (packed, as
staged). ``ldp-aggregator export TASK --reports --output DIR`` writes them as Parquet, one
row per report, partitioned Hive-style by task and day::

    DIR/task_id=TASK/day=2026-11-24/part-00000.parquet

Each file's columns are ``bucket``, ``slice`` (the report's slice of the task's public
dimensions, 0 without them; files written before it have none: all slice 0) and the
mechanism's batch arrays (a 2-D array: a fixed-size binary per report for packed bits,
else a fixed-size list), and its metadata holds the task's public configuration, so a
reader needs nothing else.
:mod:`ldp_telemetry.aggregator.archive` sums an archive with Dask into a sums file: the format of
``export --what sums --format parquet`` (one row per (bucket, slice, row) with ``n`` and the
integer ``counters``), which ``estimates --sums`` and ``heavy-hitters --sums`` read
instead of the database.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ldp_telemetry.aggregator.store.interface import SlicedSums, SumsView
from ldp_telemetry.aggregator.store.sql import chosen_slices
from ldp_telemetry.aggregator.store.staging import column_names, columns, from_columns, unpack
from ldp_telemetry.shared import Sums, TaskConfig
from ldp_telemetry.shared.mechanisms.base import Batch

TASK_KEY = b"ldp.task"  # Parquet metadata key: the task's configuration (JSON)
REPORTS_PER_FILE = 1_000_000


def day_of(bucket: int) -> str:
    """Return the UTC day (YYYY-MM-DD) a bucket starts in: the archive's partition."""
    return dt.datetime.fromtimestamp(bucket, dt.timezone.utc).date().isoformat()


def _metadata(task: TaskConfig) -> dict[bytes, bytes]:
    return {TASK_KEY: json.dumps(task.to_dict(), sort_keys=True).encode()}


def task_of(path: str | Path) -> TaskConfig:
    """Return the task a sums or archive file was written for (from its metadata)."""
    metadata = pq.read_schema(path).metadata or {}
    if TASK_KEY not in metadata:
        raise ValueError(f"{path} was not written by ldp-aggregator (no task in its metadata)")
    return TaskConfig.from_stored(json.loads(metadata[TASK_KEY]))


# -- reports -----------------------------------------------------------------------------


def reports_table(
    task: TaskConfig, buckets: np.ndarray, batch: Batch, slices: np.ndarray | None = None
) -> pa.Table:
    """Return reports as a table: ``bucket``, ``slice`` and the batch's arrays."""
    arrays: dict[str, pa.Array] = {
        "bucket": pa.array(buckets, type=pa.int64()),
        "slice": pa.array(
            np.zeros(len(buckets), np.int64) if slices is None else slices, type=pa.int64()
        ),
    }
    names = column_names(task.mechanism_object)
    for name, array in zip(names, columns(batch), strict=True):
        if array.ndim == 1:
            arrays[name] = pa.array(array)
        elif array.dtype == np.uint8:  # packed bits: one fixed-size binary value per report
            data = pa.py_buffer(np.ascontiguousarray(array).tobytes())
            arrays[name] = pa.FixedSizeBinaryArray.from_buffers(
                pa.binary(array.shape[1]), len(array), [None, data]
            )
        else:
            flat = pa.array(np.ascontiguousarray(array).reshape(-1))
            arrays[name] = pa.FixedSizeListArray.from_arrays(flat, array.shape[1])
    return pa.table(arrays).replace_schema_metadata(_metadata(task))


def table_reports(task: TaskConfig, table: pa.Table) -> tuple[np.ndarray, np.ndarray, Batch]:
    """Return (buckets, slices, batch) from a reports table (the inverse of
    :func:`reports_table`; a file without ``slice``, written before it: all 0)."""
    arrays = []
    for name in column_names(task.mechanism_object):
        column = table.column(name).combine_chunks()
        if isinstance(column.type, pa.FixedSizeBinaryType):
            width = column.type.byte_width
            data = np.frombuffer(column.buffers()[1], dtype=np.uint8)
            start = column.offset * width
            arrays.append(data[start : start + len(column) * width].reshape(-1, width))
        elif isinstance(column.type, pa.FixedSizeListType):
            width = column.type.list_size
            arrays.append(column.values.to_numpy(zero_copy_only=False).reshape(-1, width))
        else:
            arrays.append(column.to_numpy(zero_copy_only=False))
    buckets = table.column("bucket").to_numpy(zero_copy_only=False)
    slices = (
        table.column("slice").to_numpy(zero_copy_only=False)
        if "slice" in table.column_names
        else np.zeros(len(buckets), np.int64)
    )
    return buckets, slices, from_columns(task.mechanism_object, arrays)


def write_archive(
    task: TaskConfig,
    archived: Iterable[tuple[int, int, bytes]],
    folder: Path,
    reports_per_file: int = REPORTS_PER_FILE,
) -> tuple[int, list[Path]]:
    """Write archived (bucket, slice, packed batch) rows as partitioned Parquet; return
    (n, files)."""
    pending: dict[str, list[tuple[int, int, bytes]]] = {}
    counts: dict[str, int] = {}
    written: list[Path] = []
    parts: dict[str, int] = {}
    total = 0

    def flush(day: str) -> None:
        blobs = pending.pop(day, [])
        counts.pop(day, None)
        if not blobs:
            return
        mechanism = task.mechanism_object
        sizes = [len(_stacked(mechanism, blob)) for _, _, blob in blobs]
        buckets = np.repeat([b for b, _, _ in blobs], sizes).astype(np.int64)
        slices = np.repeat([s for _, s, _ in blobs], sizes).astype(np.int64)
        batch = unpack(mechanism, [blob for _, _, blob in blobs])
        table = reports_table(task, buckets, batch, slices)
        target = folder / f"task_id={task.task_id}" / f"day={day}"
        target.mkdir(parents=True, exist_ok=True)
        path = target / f"part-{parts.get(day, 0):05d}.parquet"
        parts[day] = parts.get(day, 0) + 1
        pq.write_table(table, path)
        written.append(path)

    for bucket, slice_index, blob in archived:
        day = day_of(bucket)
        pending.setdefault(day, []).append((bucket, slice_index, blob))
        size = len(_stacked(task.mechanism_object, blob))
        counts[day] = counts.get(day, 0) + size
        total += size
        if counts[day] >= reports_per_file:
            flush(day)
    for day in list(pending):
        flush(day)
    return total, written


def _stacked(mechanism: Any, blob: bytes) -> Batch:
    return unpack(mechanism, [blob])


def archive_files(folder: Path, task_id: str | None = None) -> list[Path]:
    """Return an archive's Parquet files (of one task, or of all), in a stable order."""
    pattern = f"task_id={task_id}/day=*/*.parquet" if task_id else "task_id=*/day=*/*.parquet"
    return sorted(folder.glob(pattern))


# -- sums --------------------------------------------------------------------------------

SUMS_SCHEMA = pa.schema(
    [
        ("task_id", pa.string()),
        ("bucket", pa.int64()),
        ("slice", pa.int64()),
        ("row", pa.int64()),
        ("n", pa.int64()),
        ("counters", pa.list_(pa.int64())),
    ]
)


def write_sums(
    task: TaskConfig, rows: Iterable[tuple[int, int, int, int, np.ndarray]], path: Path
) -> int:
    """Write (bucket, slice, row, n, counters) rows as a sums file; return how many rows."""
    listed = list(rows)
    table = pa.table(
        {
            "task_id": [task.task_id] * len(listed),
            "bucket": [r[0] for r in listed],
            "slice": [r[1] for r in listed],
            "row": [r[2] for r in listed],
            "n": [r[3] for r in listed],
            "counters": [np.asarray(r[4], dtype=np.int64) for r in listed],
        },
        schema=SUMS_SCHEMA,
    ).replace_schema_metadata(_metadata(task))
    pq.write_table(table, path)
    return len(listed)


def read_sum_rows(path: str | Path) -> Iterator[tuple[int, int, int, int, np.ndarray]]:
    """Yield (bucket, slice, row, n, counters) from a sums file, in its order (a file
    written before slices: slice 0)."""
    table = pq.read_table(path)
    buckets, rows, ns = (table.column(c).to_numpy() for c in ("bucket", "row", "n"))
    slices = (
        table.column("slice").to_numpy()
        if "slice" in table.column_names
        else np.zeros(len(buckets), np.int64)
    )
    counters = table.column("counters").to_pylist()
    for i in range(len(buckets)):
        yield (
            int(buckets[i]),
            int(slices[i]),
            int(rows[i]),
            int(ns[i]),
            np.asarray(counters[i], dtype=np.int64),
        )


class SumsFile:
    """A sums file as a read_sums source: the estimators read it as they read the store."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.task = task_of(path)

    def refusals(self, task: TaskConfig, start: int | None, end: int | None) -> int:
        """Return 0: a sums file holds what was counted, not what was refused."""
        return 0

    def buckets(self, task: TaskConfig) -> list[int]:
        """Return the start times of the buckets the file holds sums of, in order."""
        return sorted({bucket for bucket, _, _, _, _ in read_sum_rows(self.path)})

    @contextmanager
    def read_sums(self, task: TaskConfig, start: int | None, end: int | None) -> Iterator[SumsView]:
        """Yield the file's totals over buckets starting in [start, end) (every slice)."""
        with self.read_slices(task, start, end) as sliced:
            yield sliced.sums()

    @contextmanager
    def read_slices(
        self, task: TaskConfig, start: int | None, end: int | None
    ) -> Iterator[SlicedSums]:
        """Yield every slice's sums over buckets starting in [start, end), the file read once."""
        self._check(task)
        yield FileSlices(task, (r for r in read_sum_rows(self.path) if _inside(r[0], start, end)))

    def slice_counts(self, task: TaskConfig, start: int | None, end: int | None) -> dict[int, int]:
        """Return the reports per slice index over buckets starting in [start, end)."""
        with self.read_slices(task, start, end) as sliced:
            return dict(sliced.counts)

    def _check(self, task: TaskConfig) -> None:
        if task.fingerprint != self.task.fingerprint:
            raise ValueError(f"{self.path} holds the sums of another task configuration")


class FileSlices:
    """A sums file's rows of one window, kept per slice: each set of slices summed on demand."""

    def __init__(self, task: TaskConfig, rows: Iterable[tuple[int, int, int, int, np.ndarray]]):
        self._task = task
        self._by_slice: defaultdict[int, list[tuple[int, int, np.ndarray]]] = defaultdict(list)
        for _, slice_index, row, n, counters in rows:
            self._by_slice[slice_index].append((row, n, counters))
        counted = {i: sum(n for _, n, _ in rows) for i, rows in self._by_slice.items()}
        self.counts = {index: count for index, count in sorted(counted.items()) if count}

    def sums(self, slices: Collection[int] | None = None) -> Sums:
        """Return the sums of ``slices`` (None: every slice); ValueError for an index the
        task does not have."""
        chosen = chosen_slices(self._task, slices)
        sums: Sums = self._task.mechanism_object.new_sums()
        for index in self._by_slice if chosen is None else chosen:
            for row, n, counters in self._by_slice.get(index, ()):
                sums.n[row] += n
                sums.table[row] += counters
        return sums


def _inside(bucket: int, start: int | None, end: int | None) -> bool:
    return (start is None or bucket >= start) and (end is None or bucket < end)
