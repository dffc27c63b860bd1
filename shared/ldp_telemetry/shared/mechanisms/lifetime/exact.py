"""LOLOHA's exact estimator: solve for the value counts over the task's public hash family.

Symbols: F rows of the family (``seeds``), g buckets, d the grr domain's values, H[j, v] = h_j(v)
the bucket of value v in row j, C[j, y] the reports of row j naming bucket y (the sums' table:
nothing else is kept), n = Σ C, f(v) the count of value v (Σ_v f = n). One report follows
GRR over g with p′ = P(own bucket), q′ = P(each other bucket) (the two layers composed), its
row uniform below F. So E[C[j, y]] = (1/F)·Σ_v f(v)·(q′ + (p′ − q′)·[H[j, v] = y]), a known
linear function of f.

OLH's estimator (:mod:`ldp_telemetry.shared.mechanisms.olh`) assumes another value shares a
candidate's bucket in 1/g of the rows; over a small family the share it really has,

    M[d, v] = (1/F)·#{j : H[j, d] = H[j, v]}     (M[d, d] = 1),

differs, and the difference is a fixed bias (the collision bias). Here, with
S(d) = Σ_j C[j, H[j, d]]: E[S] = n·q′·1 + (p′ − q′)·M f, so

    f̂ = M⁻¹ (S − n·q′·1)/(p′ − q′)

is unbiased for every f whenever M is invertible (it is the least-squares solution over the
F·g cells: with B the cells × values 0/1 matrix, BᵀB = F·M and Bᵀ1 = F·1). M is invertible
only if the family tells the d values apart: rank(B) ≤ F(g − 1) + 1, so F(g − 1) + 1 ≥ d is
needed (for d = 100: F ≥ 99 at g = 2, F ≥ 33 at g = 4). Below that no estimator is unbiased
for every f; :attr:`FamilySolve.exact` is then False and OLH's estimator answers, with its
collision term.

Variance (closed form, devices independent, each device's row uniform): with L = M⁻¹Bᵀ/(p′ − q′),
u = M⁻¹1, κ = q′/(p′ − q′) and w[c] = (n·q′ + (p′ − q′)·(B f)[c])/F each cell's mean,

    Var f̂(d) = Σ_c L[d, c]²·w[c] − (f(d) + 2κ·u(d)·f(d) + κ²·n·u(d)²)

(each device is one draw over the cells, r_v its probabilities when it holds v: Cov C =
diag(w) − Σ_v f(v)·r_v r_vᵀ, and L r_v = e_v + κ·u). One more report in cell c moves f̂(d) by
L[d, c] − κ·u(d): :meth:`FamilySolve.reach`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ldp_telemetry.shared.errors import ParameterError
from ldp_telemetry.shared.hashing import RowHashes

# Work budget of the exact solve, F·g·d² multiply-adds (M is built once per task; each
# answer's variance costs F·g·d·candidates, about a second at the budget): beyond it OLH's
# estimator answers, whose collision bias shrinks as 1/F (65,536 rows over 100 values: the
# error of a private hash per device, simulations/README.md, linkage).
MAX_WORK = 1 << 30
ROWS_PER_BLOCK = 512  # rows turned into a (rows·g × d) 0/1 block at once
READ_ROWS = 4096  # rows of the sums read at once
CONDITION_LIMIT = 1e9  # M's largest/smallest eigenvalue ratio above which it is singular


class FamilySolve:
    """The exact estimator of one family over g buckets: ``hashes`` (its F rows) of the d
    values' ``keys``; H is built only when the estimator is exact (F·d can be large)."""

    def __init__(self, hashes: RowHashes, keys: np.ndarray, g: int) -> None:
        self.hashes, self.keys = hashes, keys
        self.F, self.d, self.g = hashes.k, len(keys), g
        self.buckets = np.zeros((self.F, 0), dtype=np.int64)
        self._inverse: np.ndarray | None = None
        self._unit: np.ndarray | None = None
        self._decided = False
        self._exact = False
        self._lock = threading.Lock()  # estimates may run in threads: decide once

    def __getstate__(self) -> dict[str, Any]:
        return {key: value for key, value in self.__dict__.items() if key != "_lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def exact(self) -> bool:
        """Return whether the exact estimator answers (M invertible, within the budget)."""
        with self._lock:
            if not self._decided:
                if self.F * (self.g - 1) + 1 >= self.d and self.work <= MAX_WORK:
                    self._solve()
                self._decided = True
        return self._exact

    @property
    def work(self) -> int:
        """Return F·g·d², the multiply-adds that building M takes."""
        return self.F * self.g * self.d * self.d

    def _solve(self) -> None:
        self.buckets = self.hashes.bucket_matrix(self.keys, slice(0, self.F)).T.copy()
        share = np.zeros((self.d, self.d))
        for block in self._blocks():
            share += block.T @ block
        share /= self.F
        eigenvalues = np.linalg.eigvalsh(share)
        if eigenvalues[0] * CONDITION_LIMIT <= eigenvalues[-1]:
            return
        self.share = share
        self._inverse = np.linalg.inv(share)
        self._inverse = (self._inverse + self._inverse.T) / 2
        self._unit = self._inverse.sum(axis=1)
        self._exact = True

    def _ready(self) -> None:
        if not self.exact:
            raise ParameterError(
                f"the family of {self.F} rows over {self.g} buckets does not tell the {self.d} "
                "values apart: use OLH's estimator"
            )

    def _blocks(self) -> Iterator[np.ndarray]:
        """Yield the 0/1 matrix B of each block of rows ((rows·g) × d)."""
        values = np.arange(self.d)
        for start in range(0, self.F, ROWS_PER_BLOCK):
            part = self.buckets[start : start + ROWS_PER_BLOCK]
            cells = part + self.g * np.arange(part.shape[0])[:, None]
            block = np.zeros((part.shape[0] * self.g, self.d))
            block[cells.ravel(), np.tile(values, part.shape[0])] = 1.0
            yield block

    def gathered(self, table: np.ndarray) -> np.ndarray:
        """Return S(v) = Σ_j C[j, H[j, v]] for every value."""
        return self.gather(lambda rows: table[rows])

    def gather(self, read: Callable[[slice], np.ndarray]) -> np.ndarray:
        """Return S(v) with the table's rows read block by block (a store streams them)."""
        self._ready()
        total = np.zeros(self.d)
        for start in range(0, self.F, READ_ROWS):
            rows = slice(start, min(self.F, start + READ_ROWS))
            flat = np.asarray(read(rows), dtype=float).ravel()  # counts: exact below 2^53
            part = self.buckets[rows]
            total += flat[part + self.g * np.arange(part.shape[0])[:, None]].sum(axis=0)
        return total

    def estimate(self, table: np.ndarray, n: int, keep: float, other: float) -> np.ndarray:
        """Return f̂ for every value (unbiased; ``keep``, ``other``: p′ and q′)."""
        return self.solve(self.gathered(table), n, keep, other)

    def solve(self, gathered: np.ndarray, n: int, keep: float, other: float) -> np.ndarray:
        """Return f̂ for every value from S (:meth:`gather`)."""
        self._ready()
        assert self._inverse is not None
        return self._inverse @ (gathered - n * other) / (keep - other)

    def variance(
        self, counts: np.ndarray, n: int, chosen: np.ndarray, keep: float, other: float
    ) -> np.ndarray:
        """Return Var f̂(d) for the ``chosen`` value indices at the ``counts`` of every value
        (the estimates, clipped to [0, n]) among n reports.

        The counts are first scaled to add up to n (uniform if all are 0): the variance is then
        that of a real population, never negative.
        """
        self._ready()
        assert self._inverse is not None and self._unit is not None
        counts = np.clip(np.asarray(counts, dtype=float), 0.0, None)
        total = float(counts.sum())
        counts = counts * (n / total) if total > 0 else np.full(self.d, n / self.d)
        gap = keep - other
        kappa = other / gap
        rows = self._inverse[chosen] / gap  # (chosen × d)
        spread = np.zeros(len(chosen))
        for block in self._blocks():
            weights = (n * other + gap * (block @ counts)) / self.F
            spread += (rows @ block.T) ** 2 @ weights
        u, f = self._unit[chosen], counts[chosen]
        return spread - (f + 2 * kappa * u * f + kappa * kappa * n * u * u)

    def reach(self, keep: float, other: float) -> tuple[float, float]:
        """Return the least and the most one report moves any value's f̂."""
        self._ready()
        assert self._inverse is not None and self._unit is not None
        gap = keep - other
        shift = (other / gap) * self._unit[:, None]
        low, high = np.inf, -np.inf
        for block in self._blocks():
            moved = (self._inverse @ block.T) / gap - shift
            low, high = min(low, float(moved.min())), max(high, float(moved.max()))
        return low, high
