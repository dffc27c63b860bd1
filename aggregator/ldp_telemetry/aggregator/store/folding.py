"""Fold a batch of reports into sums over only the table rows it touches.

An Apple-size sketch (k = 65,536 rows, m = 1,024) has a 512 MiB table, but a batch of a few thousand
reports touches a few thousand rows. Each mechanism folds a batch into the compact set of rows it
hits (:meth:`ldp_telemetry.shared.mechanisms.base.Mechanism.fold`); a large batch is folded a block
of rows at a time (:func:`fold_parts`), so memory is bounded by the block, not by how many rows the
batch touches.
"""

from __future__ import annotations

from collections.abc import Iterator

from ldp_telemetry.shared.mechanisms.base import Batch, Mechanism
from ldp_telemetry.shared.sums import RowSums

ROWS_PER_PART = 4096  # 32 MiB of int64 counters per part at m = 1,024


def fold(mechanism: Mechanism, batch: Batch) -> RowSums:
    """Return the sums of a batch over the rows it touches."""
    return mechanism.fold(batch)


def fold_parts(
    mechanism: Mechanism, batch: Batch, rows_per_part: int = ROWS_PER_PART
) -> Iterator[RowSums]:
    """Yield the sums of a batch for one block of ``rows_per_part`` table rows at a time."""
    for part in mechanism.split_rows(batch, rows_per_part):
        yield mechanism.fold(part)
