"""Exact integer sums of privatized reports, mergeable by addition.

Every mechanism keeps the same shape of state: per sketch row ``j`` the number of reports
``n[j]`` and a row of integer counters ``table[j, :]``. Sums from different processes,
shards or time buckets merge by adding both arrays, so the collector stores integers and
debiases only when a query runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ldp_telemetry.shared.errors import ParameterError


class Sums:
    """Integer accumulator: ``n`` (rows,) and ``table`` (rows, width), both int64."""

    def __init__(self, rows: int, width: int) -> None:
        self.n = np.zeros(rows, dtype=np.int64)
        self.table = np.zeros((rows, width), dtype=np.int64)

    def add_many(self, batch: Any) -> None:
        """Add a batch of decoded reports (each mechanism's accumulator defines it)."""
        raise NotImplementedError

    @property
    def total(self) -> int:
        """Return the number of reports added."""
        return int(self.n.sum())

    def merge(self, other: Sums) -> None:
        """Add another accumulator of the same shape into this one."""
        if type(other) is not type(self) or other.table.shape != self.table.shape:
            raise ParameterError(
                f"cannot merge {type(other).__name__}{other.table.shape} into "
                f"{type(self).__name__}{self.table.shape}: different task shapes"
            )
        self.n += other.n
        self.table += other.table

    def copy(self) -> Sums:
        """Return an independent copy."""
        twin = self.__class__.__new__(self.__class__)
        twin.__dict__.update(self.__dict__)
        twin.n, twin.table = self.n.copy(), self.table.copy()
        return twin

    def load(self, n: np.ndarray, table: np.ndarray) -> None:
        """Add stored arrays (e.g. from a database) of matching shapes into this one."""
        if n.shape != self.n.shape or table.shape != self.table.shape:
            raise ParameterError(
                f"stored sums of shape {n.shape}/{table.shape} do not match "
                f"{self.n.shape}/{self.table.shape}"
            )
        self.n += n
        self.table += table

    # Defining __eq__ sets __hash__ to None: mutable sums are unhashable, as they must be.
    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Sums)
            and type(other) is type(self)
            and np.array_equal(self.n, other.n)
            and np.array_equal(self.table, other.table)
        )


@dataclass(frozen=True)
class RowSums:
    """Sums of some table rows: ``rows`` (u,), ``n`` (u,) and ``table`` (u, width), int64.

    What a batch adds to the stored sums: only the rows it touches, so a batch of a few
    thousand reports on an Apple-size sketch (k = 65,536) costs a few thousand rows.
    """

    rows: np.ndarray
    n: np.ndarray
    table: np.ndarray


def check_shape(sums: Any, rows: int, width: int, owner: object) -> None:
    """Raise ParameterError unless ``sums.table`` has the estimating mechanism's shape.

    Without this, sums of another task were estimated silently (extra rows ignored, or a
    bare IndexError). Duck-typed on ``table.shape``: the aggregator passes stand-ins that
    read rows on demand. ``owner`` (the mechanism) is shown by its repr, made only on error.
    """
    shape = tuple(getattr(getattr(sums, "table", None), "shape", ()))
    if shape != (rows, width):
        raise ParameterError(
            f"sums with table shape {shape} cannot be estimated by {owner!r}, "
            f"whose shape is {(rows, width)}: they belong to another task"
        )
