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

from ldp_telemetry.shared.mechanisms.numeric.shape import percentile, share_below

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


# A tail beyond a percentile is taken to stretch over at least this share of Square Wave's
# half-window (b, the reach of an output's high probability): the spread the refits give the
# percentile is raised to what its share's spread makes of a tail that long (resolved_error).
# Set on the 128-bucket lognormal's p95 at eps = 1 (python -m simulations.coverage.numeric_rows
# --seed 7 --settings 4 --populations lognormal: 0.3 left 4 of its 36 answers missing, 0.35
# and 0.4 two; simulations/README.md, issue 39, part 5).
RESOLVED_TAIL = 0.35
# Only a tail is so judged: a percentile at least this many half-windows beyond the mode its
# density falls away from. A narrow mode's flank is steep and resolved (the eps = 1 bimodal's
# modes of SD 4 over [0, 100], half their values each: its p75 and p90 lie 0.01-0.2 b from
# their mode, and their refits' spread was the answers'; most fits of the lognormal put its
# p90 and p95 0.6-1.4 b beyond its mode).
TAIL_REACH = 0.25
# And only a tail the reports measure badly: the share beyond the percentile known to worse
# than this share of itself (the refits' spread of it). At eps = 2 over 256 log buckets a narrow
# mode's flank lies half a window from its top, but its share is well measured (the bimodal's
# p90 and p95: 0.10-0.27 of it; the 128-bucket lognormal's p95 at eps = 1: 0.28-0.50).
RESOLVED_SHARE = 0.25


def resolved_error(
    error: float, fitted: np.ndarray, refits: np.ndarray, q: float, half_window: float
) -> float:
    """Return a percentile's SE no smaller than Square Wave resolves the tail beyond it.

    ``error``: the refits' spread of the q-quantile in the task's units; ``half_window``:
    Square Wave's b in unit space. The refits place the quantile by two things: the share of
    values below it, which the reports measure (its spread over the refits, at ε = 1 over
    128 buckets 0.015-0.025 at a lognormal's p95 whatever the fit's shape, the answers'
    own 0.0195), and the fit's density there, which turns that share's spread into the
    quantile's (SE ≈ SD(share) / density). A tail's density is what Square Wave resolves
    worst: an output is near for every value within b of it, and a tail holds too few
    values for its shape on scales below b to show through the noise, so that shape is the
    smoothing's. Fits of that lognormal put 1.6 to 2.7 times the true density at its p95
    (its tail, of share 1 − q, compressed into 0.16-0.27 b instead of 0.43 b); their refits,
    drawn from that steep tail, spread by half the answers' spread, and those were the
    misses (seed 7: all 7 misses of 36 among its 10 steepest fits). So in a tail (at
    least ``TAIL_REACH`` b beyond the mode its density falls from, :func:`from_mode`)
    whose share the refits know to worse than ``RESOLVED_SHARE`` of itself, the density is
    capped at (1 − q) / (``RESOLVED_TAIL`` · b), the tail taken to be at least that long:
    the SE is at least SD(share) · ``RESOLVED_TAIL`` · b / (1 − q) (q for a lower tail) in
    unit space, taken to the task's units by the slope ``error`` was (their ratio). It only
    widens, after the flags (judged on the refits' spread, as they were set); where the
    fit's tail is as long as that it changes nothing, and a median's share of a half is
    never that steep.
    """
    tail = min(q, 1.0 - q)
    if from_mode(fitted, percentile(fitted, q), q >= 0.5) < TAIL_REACH * half_window:
        return error
    units = np.array([percentile(fit, q) for fit in refits])
    spread = float(np.std(units, ddof=1)) if len(units) > 1 else 0.0
    if tail <= 0.0 or spread <= 0.0:
        return error
    unit = percentile(fitted, q)
    shares = float(np.std([share_below(fit, unit) for fit in refits], ddof=1))
    if shares < RESOLVED_SHARE * tail:
        return error
    least = shares * RESOLVED_TAIL * half_window / tail
    return error * least / spread if least > spread else error


def from_mode(distribution: np.ndarray, unit: float, upper: bool) -> float:
    """Return how far ``unit`` lies beyond the mode its density falls away from: the first
    bucket no less dense than its neighbour on the way back towards the body (down for an
    ``upper`` tail), in unit space."""
    d = len(distribution)
    k = min(int(unit * d), d - 1)
    step = -1 if upper else 1
    while 0 <= k + step < d and distribution[k + step] >= distribution[k]:
        k += step
    return abs(unit - (k + 0.5) / d)
