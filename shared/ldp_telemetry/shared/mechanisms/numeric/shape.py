"""Percentiles of a reconstructed bucket distribution, and when their intervals mislead.

A Square Wave reconstruction (:mod:`numeric_estimate`) is a distribution over d equal
buckets of [0, 1]. Three things about the values are not in it, and each biases a
percentile by more than its bootstrap standard error can show:

- values clipped to the range pile up *at* lo and hi, not across the end buckets: the
  share an end bucket holds beyond its neighbour's is put on the range's end, the rest
  spread evenly (:func:`percentile`);
- what a gap between two modes looks like (a smooth reconstruction fills it in);
- where inside a bucket its values sit, and how tightly values concentrate: EMS blurs a
  single repeated value over about a dozen buckets whatever n is, so a percentile among
  values about that concentrated is off by up to a bucket plus the blur's pull (the
  concentration is judged on an EMS fit, :mod:`numeric_ems`).

:func:`doubt` says when a percentile's interval should not be read as one: it sits on a
pile at the range's end, among values concentrated about as tightly as the
reconstruction resolves (its bucket holds at least ``CONCENTRATION`` of what the
reconstruction of one repeated value holds at its peak, ``peak``), or in a gap between
larger masses. A flag for intervals narrower than their bucket was tried and dropped: it
also fired on smooth, dense distributions at large n, whose in-bucket interpolation is
right; the concentration test does not depend on n (the blur does not).
"""

from __future__ import annotations

import numpy as np

# A percentile with at least this share of values on each side whose neighbourhood (its bucket ±
# GAP_REACH, averaged; the range's ends left out, see in_gap) holds less than GAP_DENSITY of the
# densest neighbourhood on either side sits in a gap between modes. Those must be modes, at least
# GAP_MODE times an even spread: the log-spline's fits of one-mode populations (uniform, clipped)
# had thin places as deep, between masses of at most 1.40 times an even spread; the coverage
# simulation's bimodals' modes were 3.1-5.5 times (50 runs of each row, both of python -m
# simulations coverage's numeric settings). A bimodal's median sat at up to 0.65 of its modes' level
# (at 0.6, one run in 40 went unflagged, 16 SE off), or, its lower mode given 57 %, on that mode's
# edge 6 points of probability short of the gap: every bucket within GAP_SPAN of the percentile (in
# probability) is tested.
GAP_SIDE, GAP_DENSITY, GAP_REACH, GAP_MODE, GAP_SPAN = 0.2, 0.8, 2, 2.0, 0.1
# A reconstruction whose densest bucket holds at least this share of what a single
# value's reconstruction holds at its peak is of values about as concentrated as EMS
# resolves, and its blur biases every percentile (a point mass: 0.98-1.04; the coverage
# simulation's lognormal at eps = 1, 64 buckets: 0.56-0.63, p50-p95 +0.9 to +2.5 SE off;
# its bimodal there 0.30-0.35; smooth populations at 256 buckets 0.05-0.22). Raised from
# 0.45 (issue 39): the same lognormal over 128 buckets sits at 0.39-0.52 (seed 7, 40 runs),
# so it was flagged in a coin-flip of runs, and those were its accurate ones (z +0.1/+0.2:
# a sharp fit), leaving its smooth, biased fits (z +0.8 to +1.3) reliable. At 0.5 the
# 64-bucket lognormal (0.546-0.647 on the same seed; 0.55 left a few of its runs unflagged)
# and point masses stay flagged; the smoothing's bias of the rest is bounded in the SE
# (numeric_estimate.answer).
CONCENTRATION = 0.5


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


def share_below(distribution: np.ndarray, unit: float) -> float:
    """Return the share of values below ``unit`` in [0, 1]: :func:`percentile` inverted
    (the end piles at 0 and 1, every other share spread evenly over its bucket)."""
    d = len(distribution)
    low, high = end_piles(distribution)
    spread = np.array(distribution, dtype=float)
    spread[0] -= low
    spread[-1] -= high
    x = min(max(float(unit), 0.0), 1.0) * d
    i = min(int(x), d - 1)
    return float(low + spread[:i].sum() + (x - i) * spread[i])


def pile_shares(distributions: np.ndarray, reach: int) -> np.ndarray:
    """Return, per row, the shares piled at lo and hi: what each end's ``reach`` buckets
    hold beyond the even level of the ``reach`` buckets inside them (negative when less)."""
    x = np.atleast_2d(np.asarray(distributions, dtype=float))
    m = max(1, min(reach, x.shape[1] // 4))
    low = x[:, :m].sum(axis=1) - m * x[:, m : 2 * m].mean(axis=1)
    high = x[:, -m:].sum(axis=1) - m * x[:, -2 * m : -m].mean(axis=1)
    return np.stack((low, high), axis=1)


def densest(distribution: np.ndarray) -> float:
    """Return the largest share a bucket holds, values piled at lo and hi left out."""
    low, high = end_piles(distribution)
    ends = max(float(distribution[0]) - low, float(distribution[-1]) - high)
    inner = distribution[1:-1]  # none at 2 buckets
    return max(ends, float(np.max(inner))) if inner.size else ends


def blur(peak: float) -> int:
    """Return how many buckets a reconstruction spreads one repeated value over, about 1 / ``peak``
    (``peak``: the share its reconstruction puts in its fullest bucket; 0: unknown)."""
    return round(1 / peak) if peak > 0 else 0


def in_gap(distribution: np.ndarray, q: float, peak: float) -> bool:
    """Return whether a bucket within GAP_SPAN of the q-quantile is thin between denser
    places on both sides.

    Within GAP_SPAN (in probability, either way): when the truth sits in a gap, a mode's
    share a few points off puts the fit's percentile on that mode's edge instead. The
    buckets within the fit's blur of the range's ends (1 / ``peak``) are left out: clipped
    values piled at an end bleed into them and made a uniform middle look like a gap.
    """
    if not GAP_SIDE <= q <= 1 - GAP_SIDE:
        return False
    d = len(distribution)
    width = 2 * GAP_REACH + 1
    local = np.convolve(distribution, np.ones(width) / width, mode="same")
    margin = max(GAP_REACH + 1, blur(peak))
    first, last = (
        min(int(percentile(distribution, p) * d), d - 1) for p in (q - GAP_SPAN, q + GAP_SPAN)
    )
    for bucket in range(max(first, margin + 1), min(last, d - 2 - margin) + 1):
        sides = min(float(local[margin:bucket].max()), float(local[bucket + 1 : d - margin].max()))
        if local[bucket] < GAP_DENSITY * sides and sides * d >= GAP_MODE:
            return True
    return False


def doubt(distribution: np.ndarray, q: float, unit: float, peak: float) -> str | None:
    """Return why the interval of the q-quantile (at ``unit``) misleads, or None.

    ``peak``: the largest share the reconstruction of one repeated value puts in a
    bucket. Each test reads the reconstruction only, never the truth.
    """
    if unit <= 0.0 or unit >= 1.0:
        return (
            "it falls on the values piled at the range's end (clipped there): the value "
            "itself may lie beyond the range"
        )
    found = concentrated(distribution, peak)
    if found is not None:
        return found
    if in_gap(distribution, q, peak):
        return (
            "it falls in or next to a place where the reconstruction is thin between larger "
            "masses (a gap between modes): a smooth reconstruction fills a gap in, and a "
            "mode's share a few points off moves it across the gap, so its place is biased"
        )
    return None


def concentrated(distribution: np.ndarray, peak: float) -> str | None:
    """Return why no percentile of values this concentrated can be trusted, or None.

    ``peak``: the largest share the same reconstruction puts in one bucket when every
    device holds one value.
    """
    top = densest(distribution)
    if peak > 0 and top >= CONCENTRATION * peak:
        return (
            "the values concentrate about as tightly as the reconstruction resolves (its "
            f"densest bucket holds {top / peak:.0%} of what one repeated value's would): it "
            "cannot place values inside a bucket, so percentiles may be off by more than "
            "their intervals show"
        )
    return None
