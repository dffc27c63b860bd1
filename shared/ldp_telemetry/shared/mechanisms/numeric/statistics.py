"""Reading a numeric task's statistics off a distribution over its input buckets.

A distribution (shares of the task's buckets, from a reconstruction or a bootstrap refit)
answers a mean, a percentile, a histogram row or an end bucket's share in the task's units;
``to_value`` maps unit-space points in [0, 1] back to those units. Inside a bucket the
values are taken to be spread evenly in unit space (:func:`shape.percentile`);
:func:`placement_shift` says how far an answer moves if they were spread evenly in the
task's units instead.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence

import numpy as np

from ldp_telemetry.shared.mechanisms.numeric.shape import percentile

GAUSS_POINTS = 5  # Gauss-Legendre points per bucket for a bucket's mean value
PERCENTILE = re.compile(r"^p(\d{1,2}(\.\d{1,3})?)$")


def statistics(
    distribution: np.ndarray,
    names: Sequence[str],
    n: int,
    to_value: Callable[[np.ndarray], np.ndarray],
) -> list[tuple[str, float]]:
    """Return (row name, value) of each statistic asked, in the task's units.

    ``to_value`` maps unit-space points in [0, 1] back to the task's values.
    """
    buckets = len(distribution)
    rows: list[tuple[str, float]] = []
    for name in names:
        if name == "mean":
            rows.append((name, float(distribution @ bucket_means(buckets, to_value))))
        elif name == "histogram":
            edges = to_value(np.arange(buckets + 1) / buckets)
            for i in range(buckets):
                rows.append((f"[{edges[i]:.6g}, {edges[i + 1]:.6g})", float(distribution[i] * n)))
        elif name == "first_bucket":
            rows.append((name, float(distribution[0])))
        elif name == "last_bucket":
            rows.append((name, float(distribution[-1])))
        else:
            q = float(name[1:]) / 100
            rows.append((name, float(to_value(np.array([percentile(distribution, q)]))[0])))
    return rows


@functools.lru_cache(maxsize=64)
def _nodes() -> tuple[np.ndarray, np.ndarray]:
    points, weights = np.polynomial.legendre.leggauss(GAUSS_POINTS)
    return (points + 1) / 2, weights / 2


def bucket_means(buckets: int, to_value: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Return each bucket's mean value, its values spread evenly in unit space.

    The spread the percentiles assume (:func:`shape.percentile`); on a log scale a
    bucket's mean is then above its centre's value (by (ln r)²/24 of it for a bucket whose
    ends' ratio is r), which Gauss-Legendre integrates exactly enough.
    """
    points, weights = _nodes()
    unit = (np.arange(buckets)[:, None] + points[None, :]) / buckets
    return np.asarray(to_value(unit.ravel()), dtype=float).reshape(unit.shape) @ weights


def placement_shift(
    distribution: np.ndarray, name: str, value: float, to_value: Callable[[np.ndarray], np.ndarray]
) -> float:
    """Return how far a mean or percentile moves when each bucket's values are spread
    evenly in the task's units instead of in unit space (0 for the other statistics).

    The reports cannot tell where inside a bucket the values sit: on a linear scale the
    two spreads are one, on a log scale they differ by a bucket's curvature, negligible
    at the default 256 buckets and not at 3 (a mean of uniform values on [1, 10]: 5.07
    with evenly-in-log buckets, 5.50 evenly in value, the truth 5.5).
    """
    buckets = len(distribution)
    edges = np.asarray(to_value(np.arange(buckets + 1) / buckets), dtype=float)
    if name == "mean":
        return float(distribution @ ((edges[:-1] + edges[1:]) / 2)) - value
    if not PERCENTILE.match(name):
        return 0.0
    unit = percentile(distribution, float(name[1:]) / 100)
    i = min(int(unit * buckets), buckets - 1)
    inside = unit * buckets - i
    return float(edges[i] + inside * (edges[i + 1] - edges[i])) - value


def smoothing_error(error: float, move: float, null: np.ndarray) -> float:
    """Return a percentile's SE with the smoothing's bias added in quadrature.

    ``error``: the refits' spread; ``move``: how far the percentile moves in the less
    smoothed fits the search tried (:func:`numeric_refits.shape_move`); ``null``: the same
    move of each refit. The refits are drawn from the smoothed fit, so their moves are what
    noise alone makes of it: the bias squared is the move's squared distance from their
    mean less their variance, when positive (the move itself counted its noise twice:
    SE/SD 1.23-1.31 where nothing was flagged, issue 39).
    """
    null = np.asarray(null, dtype=float)
    if null.size < 2:
        return float(np.hypot(error, move))
    excess = (move - float(np.mean(null))) ** 2 - float(np.var(null, ddof=1))
    return float(np.sqrt(error**2 + max(excess, 0.0)))
