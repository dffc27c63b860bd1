"""Summaries of repeated estimation errors: spread within an item, RMSE, interval coverage."""

from __future__ import annotations

import numpy as np


def within_sd(errors: np.ndarray) -> float:
    """Return the pooled SD over repetitions (axis 0) around each item's own mean.

    ``errors`` is (repetitions, items). Removing each item's mean removes a fixed hash
    family's collision bias, leaving the mechanism's noise, which the closed forms give.
    """
    errors = np.asarray(errors, dtype=float)
    if errors.shape[0] < 2:
        raise ValueError("within_sd needs at least two repetitions")
    return float(np.sqrt(errors.var(axis=0, ddof=1).mean()))


def rmse(errors: np.ndarray) -> float:
    """Return the root mean squared error over every repetition and item."""
    return float(np.sqrt(np.mean(np.square(errors, dtype=float))))


def coverage(low: np.ndarray, high: np.ndarray, truth: np.ndarray | float) -> float:
    """Return the fraction of intervals [low, high] that contain the truth."""
    return float(np.mean((low <= truth) & (truth <= high)))


def log_slope(x: np.ndarray, y: np.ndarray) -> float:
    """Return the least-squares slope of log y against log x (the power of a power law)."""
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def clopper_pearson(successes: int, trials: int, level: float = 0.95) -> tuple[float, float]:
    """Return the exact (Clopper–Pearson) interval of a binomial rate at ``level``.

    It holds the true rate with probability at least ``level`` whatever the rate: the
    interval to read a simulated rate against a bound (a family-wise error against α) by.
    """
    from scipy.stats import beta

    if not 0 <= successes <= trials or trials < 1:
        raise ValueError(f"need 0 <= successes <= trials >= 1, got {successes}, {trials}")
    tail = (1.0 - level) / 2.0
    low = beta.ppf(tail, successes, trials - successes + 1) if successes else 0.0
    high = beta.ppf(1 - tail, successes + 1, trials - successes) if successes < trials else 1.0
    return float(low), float(high)
