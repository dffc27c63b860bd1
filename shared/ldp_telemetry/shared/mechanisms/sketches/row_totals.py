"""Totals of a sums table's rows that an estimate read, kept for the sums checks.

The bit-weight test (:func:`ldp_telemetry.shared.mechanisms.poisoning.weight_test`) needs the sum of
every cell of a sketch's table, and the estimate reads every row block anyway (a
collector's store streams them from disk). The collector asks for the estimate and then
for the checks of the same sums view, so the estimate's block reader adds up the blocks
it reads and records each row range it read whole; the checks then read only the ranges
no estimate read: none after a cms estimate, the levels an hh estimate did not need, all
of them when the checks are asked alone (a simulation) or the sums changed since.

A record names its sums object weakly (it goes with the view) and the report count the
sums had, so sums that gained reports since are read again.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

BLOCK_ROWS = 4096  # rows read at once when a range must be read for the checks

Ranges = Sequence[tuple[int, int]]


class RowTotals:
    """Per sums object: {(start, stop): Σ of those rows' cells}, at its report count."""

    def __init__(self) -> None:
        self._start()

    def _start(self) -> None:
        self._lock = threading.RLock()  # a weakref callback may run inside
        self._seen: dict[int, tuple[weakref.ref[Any], int, dict[tuple[int, int], int]]] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {}  # a pickled or deep-copied mechanism starts with nothing recorded

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._start()

    def reader(
        self, sums: Any, start: int = 0
    ) -> tuple[Callable[[slice], np.ndarray], Callable[[], None]]:
        """Return a reader of row blocks adding them up, and a call recording the total.

        The reader takes rows relative to ``start`` (a level's offset in the table); call
        the second function when done: it records the range if every row of it was read
        exactly once.
        """
        total, stop, covered = [0], [start], [0]

        def counted(rows: slice) -> np.ndarray:
            block = sums.table[start + rows.start : start + rows.stop]
            total[0] += int(np.asarray(block).sum(dtype=np.int64))
            stop[0] = max(stop[0], start + rows.stop)
            covered[0] += rows.stop - rows.start
            return block

        def done() -> None:
            if covered[0] == stop[0] - start:  # every row once: the range's total
                self.record(sums, (start, stop[0]), total[0])

        return counted, done

    def record(self, sums: Any, rows: tuple[int, int], total: int) -> None:
        """Remember that rows [start, stop) of ``sums`` hold ``total``."""
        key, reports = id(sums), int(sums.total)
        with self._lock:
            entry = self._seen.get(key)
            if entry is None or entry[0]() is not sums or entry[1] != reports:
                entry = (weakref.ref(sums, self._forget), reports, {})
                self._seen[key] = entry
            entry[2][rows] = total

    def total(self, sums: Any, ranges: Ranges) -> int:
        """Return Σ of every cell in ``ranges`` of ``sums.table``, reading only the ranges
        not recorded for these sums at their report count (and recording those)."""
        reports = int(sums.total)
        with self._lock:
            entry = self._seen.get(id(sums))
            fresh = entry is not None and entry[0]() is sums and entry[1] == reports
            known = dict(entry[2]) if entry is not None and fresh else {}
        out = 0
        for start, stop in ranges:
            if (start, stop) in known:
                out += known[(start, stop)]
                continue
            read = sum(
                int(sums.table[first : min(stop, first + BLOCK_ROWS)].sum(dtype=np.int64))
                for first in range(start, stop, BLOCK_ROWS)
            )
            self.record(sums, (start, stop), read)
            out += read
        return out

    def _forget(self, dead: weakref.ref[Any]) -> None:
        """Drop the record of sums that no longer exist."""
        with self._lock:
            for key in [key for key, entry in self._seen.items() if entry[0] is dead]:
                del self._seen[key]
