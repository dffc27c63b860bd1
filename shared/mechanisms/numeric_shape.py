"""Percentiles of a reconstructed bucket distribution, and when their intervals mislead.

A Square Wave reconstruction (:mod:`numeric_estimate`) is a distribution over d equal
buckets of [0, 1]. Two things about the values are not in it, and both bias a percentile
by more than its bootstrap standard error can show:

- values clipped to the range pile up *at* lo and hi, not across the end buckets: the
  share an end bucket holds beyond its neighbour's is put on the range's end, the rest
  spread evenly (:func:`percentile`);
- what a gap between two modes looks like (EMS's smoothing fills it in). :func:`doubt`
  says when a percentile's interval should not be read as one: it sits on a pile at the
  range's end, or in a low-density gap between larger masses.

Where inside a bucket its values sit is not in it either (a point mass at a bucket's edge
moves a percentile by up to half a bucket). A flag for intervals narrower than their
bucket was tried and dropped: it also fired on smooth, dense distributions at large n,
whose in-bucket interpolation is right.
"""

from __future__ import annotations

import numpy as np

# A percentile with at least this share of values on each side whose bucket holds less
# than GAP_DENSITY of an even spread sits in a gap between modes.
GAP_SIDE, GAP_DENSITY = 0.2, 0.5


def end_piles(distribution: np.ndarray) -> tuple[float, float]:
    """Return the shares the end buckets hold beyond their neighbours' (put at lo and hi)."""
    low = max(float(distribution[0] - distribution[1]), 0.0)
    high = max(float(distribution[-1] - distribution[-2]), 0.0)
    return low, high


def percentile(distribution: np.ndarray, q: float) -> float:
    """Return the q-quantile (q in [0, 1]) in unit space [0, 1].

    The end piles (:func:`end_piles`) sit at 0 and 1; every other share is spread evenly
    over its bucket, so the quantile is linear inside a bucket.
    """
    d = len(distribution)
    low, high = end_piles(distribution)
    if q <= low:
        return 0.0
    if q >= 1.0 - high:
        return 1.0
    spread = np.array(distribution, dtype=float)
    spread[0] -= low
    spread[-1] -= high
    cdf = low + np.cumsum(spread)
    i = min(int(np.searchsorted(cdf, q, side="left")), d - 1)
    below = cdf[i - 1] if i > 0 else low
    inside = (q - below) / spread[i] if spread[i] > 0 else 0.5
    return (i + float(np.clip(inside, 0.0, 1.0))) / d


def doubt(distribution: np.ndarray, q: float, unit: float) -> str | None:
    """Return why the interval of the q-quantile (at ``unit``) misleads, or None.

    Each test reads the reconstruction only, never the truth.
    """
    d = len(distribution)
    if unit <= 0.0 or unit >= 1.0:
        return (
            "it falls on the values piled at the range's end (clipped there): the value "
            "itself may lie beyond the range"
        )
    i = min(int(unit * d), d - 1)
    if GAP_SIDE <= q <= 1 - GAP_SIDE and distribution[i] * d < GAP_DENSITY:
        return (
            "it falls where the reconstruction is thin between larger masses (a gap "
            "between modes): EMS's smoothing fills a gap in, so its place there is biased"
        )
    return None
