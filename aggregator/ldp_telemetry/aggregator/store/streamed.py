"""Sketch sums whose rows are read from storage block by block, as the estimator asks.

An Apple-size sketch (k = 65,536, m = 1,024) is a 512 MiB table. The shared sketch
estimator only reads ``sums.total`` and blocks of rows ``sums.table[start:stop]`` (at most
a few thousand rows at a time), so this stand-in for the shared accumulator serves each
block straight from the database: memory depends on the block, not on k or on n.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

RowReader = Callable[[int, int], np.ndarray]


class RowBlocks:
    """``table[start:stop]``: rows [start, stop) summed over the query's buckets."""

    def __init__(self, rows: int, width: int, read: RowReader) -> None:
        self.shape = (rows, width)
        self._read = read

    def __getitem__(self, rows: slice) -> np.ndarray:
        if not isinstance(rows, slice) or rows.step not in (None, 1):
            # Fail loudly if the shared estimator ever indexes the table another way.
            raise TypeError(f"streamed sums serve contiguous row blocks only, got {rows!r}")
        start, stop, _ = rows.indices(self.shape[0])
        return self._read(start, max(start, stop))


class StreamedSums:
    """The ``total``, per-row ``n`` and ``table`` of a sketch's sums, read on demand.

    ``n`` (one count per row: small) is read the first time an estimator asks for it (a
    heavy-hitter search needs each level's exact report count); ``table`` block by block.
    ``total`` is read when first asked for (after a caller could check ``buckets``, how many
    stored buckets each row is summed over: what a full read costs).
    """

    def __init__(
        self,
        total: Callable[[], int],
        rows: int,
        width: int,
        read: RowReader,
        read_n: Callable[[], np.ndarray],
        buckets: int = 1,
    ) -> None:
        self._read_total = total
        self._total: int | None = None
        self.buckets = buckets
        self.table = RowBlocks(rows, width, read)
        self._read_n = read_n
        self._n: np.ndarray | None = None

    @property
    def total(self) -> int:
        """Return the number of reports."""
        if self._total is None:
            self._total = self._read_total()
        return self._total

    @property
    def n(self) -> np.ndarray:
        """Return the report count of every row (int64, one per table row)."""
        if self._n is None:
            self._n = self._read_n()
        return self._n
