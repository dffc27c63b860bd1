"""Staged reports as a read sees them: added to the stored rows in memory, never written.

A read used to fold a task's staged reports into its sums first, under the database's one
write lock: on a large sketch that fold wrote tens of thousands of 8 KiB rows while every
upload of every worker waited (measured: one upload waited 10.6 s beside an analyst's
first estimate). Instead a read takes the staged batches from its own snapshot and adds
them to the rows it reads; the sums are written only by ingest's own folds (once a task's
staged bytes pass STAGED_BYTES), so a read holds no write lock at all.

Memory stays bounded by a block of rows, as for stored sums: the staged batch is split by
blocks of ``ROWS_PER_PART`` rows and a block is folded when a read first asks for one of
its rows (the last folded block is kept: estimators read rows in order).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ldp_telemetry.aggregator.store.folding import ROWS_PER_PART
from ldp_telemetry.aggregator.store.staging import unpack
from ldp_telemetry.shared.mechanisms.base import Batch, Mechanism
from ldp_telemetry.shared.sums import RowSums


class StagedRows:
    """The sums of staged reports (one window of buckets), folded a block at a time."""

    def __init__(self, mechanism: Mechanism, staged: Iterable[tuple[int, bytes]]) -> None:
        blobs, buckets = [], set()
        for bucket, data in staged:
            blobs.append(bytes(data))
            buckets.add(int(bucket))
        self.buckets = buckets
        self._mechanism = mechanism
        self._parts: list[tuple[int, int, Batch]] = []  # (first row, last row, reports)
        self.n_rows = np.zeros(0, np.int64)
        self.n_counts = np.zeros(0, np.int64)
        self._cached: tuple[int, RowSums] | None = None
        if not blobs:
            self.total = 0
            return
        rows, counts = [], []
        for part in mechanism.split_rows(unpack(mechanism, blobs), ROWS_PER_PART):
            folded = mechanism.fold(part)  # once here for its rows and n; again when read
            self._parts.append((int(folded.rows.min()), int(folded.rows.max()), part))
            rows.append(folded.rows)
            counts.append(folded.n)
        self.n_rows = np.concatenate(rows).astype(np.int64)
        self.n_counts = np.concatenate(counts).astype(np.int64)
        self.total = int(self.n_counts.sum())

    def add_n(self, n: np.ndarray) -> None:
        """Add the staged reports' count of every row to ``n`` (one count per table row)."""
        np.add.at(n, self.n_rows, self.n_counts)

    def add_block(self, block: np.ndarray, start: int) -> None:
        """Add the staged sums of rows [start, start + len(block)) to ``block``."""
        stop = start + len(block)
        for index, (first, last, part) in enumerate(self._parts):
            if last < start or first >= stop:
                continue
            folded = self._fold(index, part)
            inside = (folded.rows >= start) & (folded.rows < stop)
            np.add.at(block, folded.rows[inside] - start, folded.table[inside])

    def add_dense(self, n: np.ndarray, table: np.ndarray) -> None:
        """Add every staged row to a whole (small) table and its counts."""
        for index, (_, _, part) in enumerate(self._parts):
            folded = self._fold(index, part)
            np.add.at(n, folded.rows, folded.n)
            np.add.at(table, folded.rows, folded.table)

    def _fold(self, index: int, part: Batch) -> RowSums:
        if self._cached is None or self._cached[0] != index:
            self._cached = (index, self._mechanism.fold(part))
        return self._cached[1]
