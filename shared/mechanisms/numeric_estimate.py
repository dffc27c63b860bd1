"""What a numeric task's estimates are: the reconstructed distribution and its statistics.

Square Wave reports are turned back into a distribution over the task's input buckets by
EMS, expectation-maximisation with smoothing (Li et al., SIGMOD 2020): EM on the exact
transition matrix P(output | bucket), with a binomial [1, 2, 1]/4 smoothing of the
estimate after every step, until the log-likelihood gains less than ``TOLERANCE`` per
report. From it come the mean, any percentile (the CDF interpolated inside a bucket) and
the histogram. EMS has no closed-form variance, so standard errors come from a
parametric bootstrap: ``BOOTSTRAP`` multinomial resamples of n reports from the fitted
output distribution, each reconstructed again (seeded by the counts, so the same sums
always give the same answer). Intervals are estimate ± z·SE like every other estimate.

A query names what it wants: ``mean``, ``pNN`` (a percentile, e.g. ``p50``, ``p99.9``),
``histogram`` (one row per bucket, ``[lo, hi)`` in the task's units, its estimated count)
or ``clipped_low`` / ``clipped_high`` (the estimated share of reports in the first / last
bucket, where values at or beyond the range's ends land).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence

import numpy as np

from shared.errors import ParameterError
from shared.estimates import Estimates

# EMS stops once the log-likelihood gains less than this per report. Stopping early leaves
# mass spread into the far tail, which biases the mean up: 1e-7 gave +5.9 % on lognormal
# latencies (n = 10^5, eps = 2), 1e-10 gives +1.5 % (simulations/numeric.py).
TOLERANCE = 1e-10
BOOTSTRAP_TOLERANCE = 1e-8  # resamples only measure the spread: a shared offset cancels
MAX_ITERATIONS = 10_000
BOOTSTRAP = 24  # resamples for the standard errors
DEFAULT_QUERY = ("mean", "p50", "p75", "p90", "p95", "p99", "clipped_low", "clipped_high")
PERCENTILE = re.compile(r"^p(\d{1,2}(\.\d{1,3})?)$")
NAMES = "mean, pNN (e.g. p50, p99.9), histogram, clipped_low, clipped_high"


def parse_query(raw: object, percentiles_only_from_distribution: bool) -> list[str] | None:
    """Return the statistics a query names (None: the default), or raise ParameterError."""
    if raw is None:
        return None
    if not isinstance(raw, list) or not raw or not all(isinstance(c, str) for c in raw):
        raise ParameterError(f"candidates must be a non-empty list among: {NAMES}")
    for name in raw:
        if name in ("mean", "histogram", "clipped_low", "clipped_high") or PERCENTILE.match(name):
            if name != "mean" and not percentiles_only_from_distribution:
                raise ParameterError(
                    f"this task's method estimates the mean only, not {name!r} (use method sw)"
                )
            continue
        raise ParameterError(f"unknown statistic {name[:32]!r}; ask for: {NAMES}")
    return list(raw)


def nothing(
    names: Sequence[str], buckets: int, to_value: Callable[[np.ndarray], np.ndarray], level: float
) -> Estimates:
    """Return the answer to a query over no reports: every row 0, standard error 0."""
    uniform = np.full(buckets, 1.0 / buckets)
    rows = [row for row, _ in statistics(uniform, names, 0, to_value)]
    zeros = np.zeros(len(rows))
    return Estimates.from_variance(rows, zeros, zeros, 0, level)


def smooth(x: np.ndarray) -> np.ndarray:
    """Return x convolved with [1, 2, 1]/4, the edges reflected (mass is kept)."""
    padded = np.concatenate(([x[0]], x, [x[-1]]))
    return (padded[:-2] + 2 * padded[1:-1] + padded[2:]) / 4


def ems(
    transition: np.ndarray,
    counts: np.ndarray,
    start: np.ndarray | None = None,
    tolerance: float = TOLERANCE,
) -> np.ndarray:
    """Return the bucket distribution that EMS fits to output ``counts``.

    ``transition[o, i]`` is P(output o | bucket i); the result sums to 1.
    """
    n = counts.sum()
    buckets = transition.shape[1]
    if n == 0:
        return np.full(buckets, 1.0 / buckets)
    observed = counts / n
    x = np.full(buckets, 1.0 / buckets) if start is None else start.copy()
    previous = -np.inf
    for _ in range(MAX_ITERATIONS):
        fitted = transition @ x
        x = x * (
            transition.T @ np.divide(observed, fitted, where=fitted > 0, out=np.zeros_like(fitted))
        )
        x = smooth(x)
        x /= x.sum()
        fitted = transition @ x
        likelihood = float(observed @ np.log(np.maximum(fitted, 1e-300)))
        if likelihood - previous < tolerance:
            break
        previous = likelihood
    return x


def percentile(distribution: np.ndarray, q: float) -> float:
    """Return the q-quantile (q in [0, 1]) in unit space [0, 1], linear inside a bucket."""
    cdf = np.cumsum(distribution)
    i = int(np.searchsorted(cdf, q, side="left"))
    i = min(i, len(distribution) - 1)
    below = cdf[i - 1] if i > 0 else 0.0
    inside = (q - below) / distribution[i] if distribution[i] > 0 else 0.5
    return (i + float(np.clip(inside, 0.0, 1.0))) / len(distribution)


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
    centres = to_value((np.arange(buckets) + 0.5) / buckets)
    rows: list[tuple[str, float]] = []
    for name in names:
        if name == "mean":
            rows.append((name, float(distribution @ centres)))
        elif name == "histogram":
            edges = to_value(np.arange(buckets + 1) / buckets)
            for i in range(buckets):
                rows.append((f"[{edges[i]:.6g}, {edges[i + 1]:.6g})", float(distribution[i] * n)))
        elif name == "clipped_low":
            rows.append((name, float(distribution[0])))
        elif name == "clipped_high":
            rows.append((name, float(distribution[-1])))
        else:
            q = float(name[1:]) / 100
            rows.append((name, float(to_value(np.array([percentile(distribution, q)]))[0])))
    return rows


def bootstrap(
    fitted_outputs: np.ndarray,
    n: int,
    refit: Callable[[np.ndarray], np.ndarray],
    measure: Callable[[np.ndarray], np.ndarray],
    counts: np.ndarray,
) -> np.ndarray:
    """Return the standard error of each statistic ``measure`` gives, over resamples.

    Resamples are n reports drawn from ``fitted_outputs`` (the outputs' fitted
    probabilities), each refitted; the generator is seeded by the observed ``counts``.
    """
    seed = int.from_bytes(hashlib.sha256(counts.astype("<i8").tobytes()).digest()[:8], "little")
    rng = np.random.default_rng(seed)
    probabilities = fitted_outputs / fitted_outputs.sum()
    replicates = [measure(refit(rng.multinomial(n, probabilities))) for _ in range(BOOTSTRAP)]
    return np.std(np.array(replicates), axis=0, ddof=1)
