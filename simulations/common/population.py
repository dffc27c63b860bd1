"""Fixed populations of string values: how many devices hold each value.

The mechanisms' noise is the only randomness the closed forms describe, so experiments
fix the population (exact counts per value) and repeat only the privatization.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Population:
    """Distinct values and the number of devices holding each (int64, same order)."""

    values: tuple[str, ...]
    counts: np.ndarray

    @property
    def n(self) -> int:
        """Return the number of devices."""
        return int(self.counts.sum())

    def count_of(self, values: list[str]) -> np.ndarray:
        """Return the true count of each value (0 for a value nobody holds)."""
        index = {v: i for i, v in enumerate(self.values)}
        return np.array(
            [self.counts[index[v]] if v in index else 0 for v in values], dtype=np.int64
        )


def apportion(n: int, weights: np.ndarray) -> np.ndarray:
    """Return integer counts summing to ``n`` in proportion to ``weights`` (largest remainder)."""
    if n < 0 or np.any(weights < 0) or weights.sum() <= 0:
        raise ValueError("apportion needs n >= 0 and non-negative weights with a positive sum")
    exact = n * weights / weights.sum()
    counts = np.floor(exact).astype(np.int64)
    short = n - int(counts.sum())
    counts[np.argsort(counts - exact, kind="stable")[:short]] += 1
    return counts


def zipf_population(n: int, size: int, exponent: float = 1.1, prefix: str = "w") -> Population:
    """Return n devices over ``size`` values with Zipf frequencies ∝ 1/rank^exponent."""
    ranks = np.arange(1, size + 1, dtype=float)
    return Population(value_names(prefix, size), apportion(n, ranks**-exponent))


def uniform_population(n: int, size: int, prefix: str = "u") -> Population:
    """Return n devices spread as evenly as possible over ``size`` values."""
    return Population(value_names(prefix, size), apportion(n, np.ones(size)))


def value_names(prefix: str, size: int) -> tuple[str, ...]:
    """Return ``size`` distinct value names such as ``w00000``, ``w00001``..."""
    return tuple(f"{prefix}{i:05d}" for i in range(size))
