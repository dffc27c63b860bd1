"""What the SQL backends share: the transaction they write through and the sums arithmetic.

Both backends keep the same tables (tasks, sums per (task, bucket, slice, row) with counters
as little-endian integers, each row as narrow as its values allow
(:mod:`~ldp_telemetry.aggregator.store.counters`), seen report ids, staged packed batches,
tokens) and write the sums the same way, so a PostgreSQL collector and a SQLite one fed the
same reports hold bit-identical sums. The statements here use ``?`` placeholders; a backend
whose driver wants another style adapts them in its :class:`Tx`. Statements name their columns: the
``slice`` column (migration 0008) is not in the same place in both backends' tables.

A slice is a task's public dimensions' combination (:mod:`ldp_telemetry.shared.dimensions`;
0 for a task without dimensions): its rows are stored apart, so a read may take some slices
(:func:`chosen_slices`, :func:`in_clause`) and a task's totals are the sum over its slices.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ldp_telemetry.aggregator.store import counters
from ldp_telemetry.aggregator.store.folding import fold_parts
from ldp_telemetry.aggregator.store.interface import Upload
from ldp_telemetry.aggregator.store.staging import pack, stack, unpack
from ldp_telemetry.shared import Envelope, TaskConfig
from ldp_telemetry.shared.contract import IMPLAUSIBLE_REPORT
from ldp_telemetry.shared.sums import RowSums

CHUNK = 500  # parameters per IN (...) list


class Rows(Protocol):
    """A statement's result: its rows, and how many rows it changed (a cursor)."""

    @property
    def rowcount(self) -> int:
        """Return how many rows the statement inserted, updated or deleted."""

    def __iter__(self) -> Iterator[Any]:
        """Iterate over the result rows."""


class Tx(Protocol):
    """A transaction: statements with ``?`` placeholders (sqlite3.Connection is one)."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Rows:
        """Run one statement; return its result rows."""

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Any:
        """Run one statement once per parameter row."""


@runtime_checkable
class BulkTx(Tx, Protocol):
    """A transaction that upserts many sums rows in one statement (PostgreSQL: arrays)."""

    def upsert_rows(
        self,
        table: str,
        key: tuple[str, ...],
        values: tuple[Any, ...],
        written: tuple[list[int], list[int], list[bytes]],
    ) -> None:
        """Insert or replace the (row, n, counters) ``written`` of ``table`` under ``key``."""


def marks(count: int) -> str:
    """Return ``count`` comma-separated placeholders (an ``IN (...)`` list)."""
    return ",".join("?" * count)


def first_expiries(uploads: Sequence[Upload], task_id: str) -> dict[bytes, int]:
    """Return, per report id of a task in the uploads, the expiry sent with its first sighting."""
    first: dict[bytes, int] = {}
    for upload in uploads:
        if upload.task.task_id == task_id:
            for envelope, expires in zip(upload.envelopes, upload.expires, strict=True):
                first.setdefault(envelope.report_id, int(expires))
    return first


def first_sightings(
    uploads: Sequence[Upload], seen: dict[str, set[bytes]]
) -> tuple[list[set[bytes]], dict[str, list[tuple[Envelope, int]]]]:
    """Split a group of uploads into replays and the reports to count, in upload order.

    ``seen``: per task id, the group's ids the store knew before. Returns each upload's
    replayed ids (known before, or first sent by an earlier upload of the group) and, per
    task id, the (envelope, expires) pairs counted: every id once, at its first sighting.
    """
    known = {task_id: set(ids) for task_id, ids in seen.items()}
    replayed: list[set[bytes]] = []
    fresh: dict[str, list[tuple[Envelope, int]]] = {}
    for upload in uploads:
        task_id = upload.task.task_id
        ids, counted, repeated = (
            known.setdefault(task_id, set()),
            fresh.setdefault(task_id, []),
            set(),
        )
        for envelope, expires in zip(upload.envelopes, upload.expires, strict=True):
            if envelope.report_id in ids:
                repeated.add(envelope.report_id)
            else:
                ids.add(envelope.report_id)
                counted.append((envelope, expires))
        replayed.append(repeated)
    return replayed, fresh


StagedRow = tuple[str, int, int, bytes]  # (task_id, bucket, slice, packed batch)


def staged_rows(task: TaskConfig, envelopes: Sequence[Envelope]) -> list[StagedRow]:
    """Return (task_id, bucket, slice, packed batch) rows staging new reports, one per
    bucket and slice."""
    by_key: defaultdict[tuple[int, int], list] = defaultdict(list)
    for envelope in envelopes:
        by_key[envelope.time, envelope.slice].append(envelope.payload)
    return [
        (task.task_id, bucket, slice_index, pack(stack(task.mechanism_object, payloads)))
        for (bucket, slice_index), payloads in by_key.items()
    ]


def stage(tx: Tx, rows: list[StagedRow], *, archive: bool) -> None:
    """Insert staged rows; an archiving task also keeps them, unchanged, in ``archived``."""
    columns = "(task_id, bucket, slice, data) VALUES (?, ?, ?, ?)"
    tx.executemany(f"INSERT INTO staged {columns}", rows)
    if archive:
        tx.executemany(f"INSERT INTO archived {columns}", rows)


def chosen_slices(task: TaskConfig, slices: Collection[int] | None) -> list[int] | None:
    """Return the sorted distinct slice indices a read takes (None: every slice of the task).

    Raises ValueError for an index the task does not have.
    """
    if slices is None:
        return None
    return sorted({_slice_index(index, task.slice_count) for index in slices})


def in_clause(task: TaskConfig, chosen: Sequence[int] | None) -> str:
    """Return the ``AND slice IN (...)`` of a read of ``chosen`` slices ('' for all of them).

    ``None`` (every slice) names them while they are few, so that each slice's rows stay an
    index range scan (the key is (task, bucket, slice, row)). The indices are checked
    integers (:func:`chosen_slices`), written into the statement: no placeholder count to
    keep under a driver's limit.
    """
    if chosen is None:
        if task.slice_count > CHUNK:
            return ""
        chosen = range(task.slice_count)
    if not chosen:
        return " AND 1 = 0"
    return f" AND slice IN ({','.join(map(str, chosen))})"


def _slice_index(index: object, count: int) -> int:
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
        raise ValueError(f"a slice index is an integer, got {index!r}")
    if not 0 <= int(index) < count:
        raise ValueError(f"slice {index} is not one of the task's {count} slices")
    return int(index)


def fold_into_sums(tx: Tx, task: TaskConfig, staged: Iterable[tuple[int, int, bytes]]) -> None:
    """Add staged (bucket, slice, packed batch) rows to the task's sums and its roll-up.

    The caller holds what makes this read-modify-write safe (SQLite's write lock, or a PostgreSQL
    lock on the task's folds). A sketch's roll-up (:mod:`ldp_telemetry.aggregator.store.rollup`)
    gains in the same transaction what the buckets gain.
    """
    by_key: defaultdict[tuple[int, int], list[bytes]] = defaultdict(list)
    for bucket, slice_index, data in staged:
        by_key[int(bucket), int(slice_index)].append(bytes(data))
    mechanism = task.mechanism_object
    rolled_up = mechanism.sums_shape[0] > 1  # a single row is read whole: no roll-up
    for (bucket, slice_index), blobs in sorted(by_key.items()):
        for part in fold_parts(mechanism, unpack(mechanism, blobs)):
            add_rows(tx, task.task_id, bucket, slice_index, part)
            if rolled_up:
                merge_rows(tx, "rollup", ("task_id", "slice"), (task.task_id, slice_index), part)


def add_rows(tx: Tx, task_id: str, bucket: int, slice_index: int, new: RowSums) -> None:
    """Add freshly folded sums to a bucket's stored rows of one slice."""
    merge_rows(tx, "sums", ("task_id", "bucket", "slice"), (task_id, bucket, slice_index), new)


Written = tuple[list[int], list[int], list[bytes]]  # rows, their n, their counters (encoded)


def merge_rows(
    tx: Tx, table: str, key: tuple[str, ...], values: tuple[Any, ...], new: RowSums
) -> None:
    """Add ``new`` to the rows of ``table`` (``sums`` or ``rollup``) under ``key``.

    ``new`` is left as it was: a fold adds the same part to a bucket and to the roll-up.
    """
    write_rows(tx, table, key, values, merged_rows(tx, table, key, values, new))


def merged_rows(
    tx: Tx, table: str, key: tuple[str, ...], values: tuple[Any, ...], new: RowSums
) -> Written:
    """Return the rows of ``table`` under ``key`` that ``new`` touches, with ``new`` added.

    The stored rows it touches are read a chunk at a time, decoded and added with one numpy
    add, and encoded in their narrowest form (:mod:`~ldp_telemetry.aggregator.store.counters`).
    Nothing is written (:func:`write_rows` does): a fold off the write lock computes these
    from a snapshot (:mod:`ldp_telemetry.aggregator.store.sqlite.fold`).
    """
    rows = new.rows.astype(np.int64)
    n, table_ = new.n.astype(np.int64), new.table.astype(np.int64)  # copies
    width = table_.shape[1]
    position = {row: i for i, row in enumerate(rows.tolist())}
    where = " AND ".join(f"{column} = ?" for column in key)
    listed = list(position)
    for found in _stored(tx, f"SELECT row, n, counters FROM {table} WHERE {where}", values, listed):
        if found:
            at = np.fromiter((position[r] for r, _, _ in found), dtype=np.int64, count=len(found))
            n[at] += np.fromiter((c for _, c, _ in found), dtype=np.int64, count=len(found))
            table_[at] += counters.decode([b for _, _, b in found], width)
    return listed, n.tolist(), counters.encode(table_)


def write_rows(
    tx: Tx, table: str, key: tuple[str, ...], values: tuple[Any, ...], written: Written
) -> None:
    """Insert or replace the (row, n, counters) ``written`` of ``table`` under ``key``."""
    if isinstance(tx, BulkTx):
        tx.upsert_rows(table, key, values, written)
        return
    listed, n, blobs = written
    tx.executemany(
        f"INSERT INTO {table} ({', '.join(key)}, row, n, counters) "
        f"VALUES ({marks(len(key) + 3)}) "
        f"ON CONFLICT ({', '.join(key)}, row) "
        "DO UPDATE SET n = excluded.n, counters = excluded.counters",
        [(*values, row, count, blob) for row, count, blob in zip(listed, n, blobs, strict=True)],
    )


def _stored(tx: Tx, select: str, values: tuple[Any, ...], rows: list[int]) -> Iterator[list[Any]]:
    """Yield the stored (row, n, counters) of ``rows``, a statement at a time: one range scan
    when they fill at least a quarter of their range (a fold of a dense part), else ``IN``
    lists of CHUNK rows (a few rows of a large sketch)."""
    low, high = (min(rows), max(rows)) if rows else (0, -1)
    if rows and 4 * len(rows) >= high - low + 1:
        wanted = set(rows)
        found = tx.execute(f"{select} AND row >= ? AND row <= ?", (*values, low, high))
        yield [stored for stored in found if stored[0] in wanted]
        return
    for start in range(0, len(rows), CHUNK):
        part = rows[start : start + CHUNK]
        yield list(tx.execute(f"{select} AND row IN ({marks(len(part))})", (*values, *part)))


def sum_buckets(
    tx: Tx,
    task_id: str,
    buckets: Sequence[int],
    start: int,
    stop: int,
    width: int,
    slices: str = "",
) -> tuple[np.ndarray, np.ndarray]:
    """Return (n, counters) of rows [start, stop) summed over ``buckets`` and the slices of
    ``slices`` (an :func:`in_clause`; one index range scan per bucket and slice; each
    bucket's blobs joined and added with one numpy add)."""
    n = np.zeros(stop - start, dtype=np.int64)
    block = np.zeros((stop - start, width), dtype=np.int64)
    for bucket in buckets:
        found = list(
            tx.execute(
                f"SELECT row, n, counters FROM sums WHERE task_id = ? AND bucket = ?{slices} "
                "AND row >= ? AND row < ?",
                (task_id, bucket, start, stop),
            )
        )
        if not found:
            continue
        rows = np.fromiter((row for row, _, _ in found), dtype=np.int64, count=len(found))
        counts = np.fromiter((c for _, c, _ in found), dtype=np.int64, count=len(found))
        decoded = counters.decode([b for _, _, b in found], width)
        unique = len(np.unique(rows)) == len(rows)
        add_at(n, rows - start, counts, unique)
        add_at(block, rows - start, decoded, unique)
    return n, block


def add_at(target: np.ndarray, at: np.ndarray, values: np.ndarray, unique: bool) -> None:
    """Add ``values`` to ``target`` at positions ``at``, which repeat when several slices
    hold a row (``unique`` False); one fancy-indexed add when they do not, as for every task
    without dimensions (np.add.at is several times slower)."""
    if unique:
        target[at] += values
    else:
        np.add.at(target, at, values)


def record_refusals(tx: Tx, uploads: Sequence[Upload]) -> None:
    """Add the uploads' implausible reports to their buckets' refusal counts."""
    counts: dict[tuple[str, int], int] = defaultdict(int)
    for upload in uploads:
        for bucket, count in upload.refused.items():
            counts[upload.task.task_id, bucket] += count
    if counts:  # in key order, so two writers cannot deadlock on these rows
        tx.executemany(
            "INSERT INTO refusals VALUES (?, ?, ?, ?) ON CONFLICT (task_id, bucket, reason) "
            "DO UPDATE SET count = refusals.count + excluded.count",
            [
                (task_id, bucket, IMPLAUSIBLE_REPORT, c)
                for (task_id, bucket), c in sorted(counts.items())
            ],
        )


def refusals_in(tx: Tx, task_id: str, start: int | None, end: int | None) -> int:
    """Return how many reports of buckets starting in [start, end) were implausible."""
    rows = tx.execute(
        "SELECT COALESCE(SUM(count), 0) FROM refusals WHERE task_id = ? AND reason = ? "
        "AND bucket >= ? AND bucket < ?",
        (task_id, IMPLAUSIBLE_REPORT, 0 if start is None else start, 2**62 if end is None else end),
    )
    return int(next(iter(rows))[0])
