"""Fold a batch of reports into sums over only the sketch rows it touches.

An Apple-size sketch (k = 65,536 rows, m = 1,024) has a 512 MiB table, but a batch of a
few thousand reports touches a few thousand rows. The shared accumulators are built for the
compact row set (row j of the batch renumbered to its rank among the rows hit), filled with
``add_many``, and handed to storage with the real row numbers. A large batch is folded a
block of rows at a time (:func:`fold_parts`), so memory is bounded by the block, not by
how many rows the batch touches.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields, replace

import numpy as np

from aggregator.staging import Batch
from shared import (
    CountMeanSketch,
    CountMeanSketchSums,
    HadamardCountMeanSketch,
    HadamardCountMeanSketchSums,
    Mechanism,
)

ROWS_PER_PART = 4096  # 32 MiB of int64 counters per part at m = 1,024


@dataclass(frozen=True)
class RowSums:
    """Sums of some rows: ``rows`` (u,), ``n`` (u,) and ``table`` (u, width), all int64."""

    rows: np.ndarray
    n: np.ndarray
    table: np.ndarray


def fold(mechanism: Mechanism, batch: Batch) -> RowSums:
    """Return the sums of a batch over the rows it touches."""
    if isinstance(mechanism, CountMeanSketch | HadamardCountMeanSketch):
        assert not isinstance(batch, np.ndarray)
        rows, compact = np.unique(batch.rows, return_inverse=True)
        sums_class = (CountMeanSketchSums if isinstance(mechanism, CountMeanSketch)
                      else HadamardCountMeanSketchSums)
        sums = sums_class(len(rows), mechanism.m)
        sums.add_many(replace(batch, rows=compact.astype(np.int64)))  # type: ignore[arg-type]
        return RowSums(rows.astype(np.int64), sums.n, sums.table)
    flat = mechanism.new_sums()  # rr and grr keep a single row
    flat.add_many(batch)  # type: ignore[arg-type]
    return RowSums(np.zeros(1, dtype=np.int64), flat.n, flat.table)


def fold_parts(mechanism: Mechanism, batch: Batch,
               rows_per_part: int = ROWS_PER_PART) -> Iterator[RowSums]:
    """Yield the sums of a batch for one block of ``rows_per_part`` sketch rows at a time."""
    if isinstance(batch, np.ndarray):  # rr and grr: a single row
        yield fold(mechanism, batch)
        return
    block = batch.rows // rows_per_part
    order = np.argsort(block, kind="stable")
    for part in np.split(order, np.flatnonzero(np.diff(block[order])) + 1):
        columns = (getattr(batch, column.name)[part] for column in fields(batch))
        yield fold(mechanism, type(batch)(*columns))
