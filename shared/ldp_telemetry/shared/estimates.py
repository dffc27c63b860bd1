"""Estimates with standard errors and normal-approximation confidence intervals."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from ldp_telemetry.shared.answers import EstimateRow
from ldp_telemetry.shared.errors import ParameterError

DEFAULT_LEVEL = 0.95


@functools.lru_cache(maxsize=64)
def z_value(level: float) -> float:
    """Return the two-sided standard-normal quantile for a confidence level in (0, 1).

    Cached: a breakdown estimates every row at the same level.
    """
    if not 0.0 < level < 1.0:
        raise ParameterError(f"confidence level must be in (0, 1), got {level}")
    return NormalDist().inv_cdf(0.5 + level / 2.0)


@dataclass(frozen=True)
class Estimates:
    """Debiased counts for some values, with standard errors and confidence intervals.

    ``estimate`` is an unbiased count (it can be negative or exceed ``n``: clipping would
    bias it); divide by ``n`` for a proportion.
    """

    values: tuple[Any, ...]
    estimate: np.ndarray
    std_error: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    n: int
    level: float

    @classmethod
    def from_variance(
        cls,
        values: Sequence[Any],
        estimate: np.ndarray,
        variance: np.ndarray,
        n: int,
        level: float = DEFAULT_LEVEL,
    ) -> Estimates:
        """Build intervals estimate ± z·sqrt(variance)."""
        std_error = np.sqrt(np.maximum(variance, 0.0))
        half = z_value(level) * std_error
        return cls(
            tuple(values), estimate, std_error, estimate - half, estimate + half, int(n), level
        )

    def proportions(self) -> Estimates:
        """Return the same estimates divided by n (all zero when n is 0)."""
        scale = 1.0 / self.n if self.n else 0.0
        return Estimates(
            self.values,
            self.estimate * scale,
            self.std_error * scale,
            self.ci_low * scale,
            self.ci_high * scale,
            self.n,
            self.level,
        )

    def rows(self) -> list[EstimateRow]:
        """Return one JSON-ready dict per value."""
        # Each column converted at once (tolist: the floats float() gives, in C), not per cell.
        columns = (self.estimate, self.std_error, self.ci_low, self.ci_high)
        floats = [np.asarray(column, dtype=float).tolist() for column in columns]
        return [
            {"value": value, "estimate": e, "std_error": s, "ci_low": lo, "ci_high": hi}
            for value, e, s, lo, hi in zip(self.values, *floats, strict=True)
        ]
