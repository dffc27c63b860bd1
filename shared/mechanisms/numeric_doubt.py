"""When a Square Wave answer's interval would mislead: the doubts that read the fit.

:mod:`numeric_estimate` answers every statistic from an EMS fit and its bootstrap refits;
the tests here say when an answer must carry ``reliable: false`` and a reason a user can
act on. Each reads the privatized data only (the fit, its refits, and ``peak``: the
largest share EMS puts in one bucket when every device holds one value, the same at any
n). Thresholds were set on ``ldp-sim coverage``'s numeric rows (simulations/README.md).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from shared.mechanisms.numeric_shape import blur, densest, doubt, near_piles, percentile

# A linear mean is flagged when the fit's largest bucket holds this share of a single
# value's reconstructed peak and half a bucket exceeds MEAN_SLACK standard errors (its
# bias can reach half a bucket: +1.0 SE for a point mass on a bucket's edge at eps = 1).
MEAN_CONCENTRATION, MEAN_SLACK = 0.8, 0.3
# A percentile within this many bootstrap SEs of a pile at the range's end is flagged: the
# pile's share is uncertain, and a percentile just short of it may be the end itself.
PILE_REACH = 2.0


def percentile_doubt(fitted: np.ndarray, refits: np.ndarray, q: float, peak: float) -> str | None:
    """Return why the q-quantile's interval misleads, or None.

    :func:`numeric_shape.doubt` on the fit, and a pile at the range's end within
    ``PILE_REACH`` of the refits' spread of it, counting what EMS bled of it into the
    buckets within its blur (:func:`numeric_shape.near_piles`): a percentile just short of
    a pile, whose share is uncertain, may be the range's end itself (a clipped
    population's p95, right at the pile's edge, was flagged in 42-60 % of runs; the rest
    covered 70-81 %).
    """
    found = doubt(fitted, q, percentile(fitted, q), peak)
    if found is not None:
        return found
    bleed = max(1, 2 * blur(peak))  # a pile's bleed was seen up to ~20 buckets
    piles = np.array([near_piles(x, bleed) for x in refits])
    reach = np.array(near_piles(fitted, bleed)) + PILE_REACH * np.std(piles, axis=0, ddof=1)
    if q <= reach[0] or q >= 1 - reach[1]:
        return (
            "it is within reach of the values piled at the range's end (clipped there: "
            f"{reach[0]:.1%} at lo, {reach[1]:.1%} at hi with {PILE_REACH:g} standard errors): "
            "it may be the range's end itself"
        )
    return None


def concentrated_mean(
    fitted: np.ndarray,
    peak: float,
    to_value: Callable[[np.ndarray], np.ndarray],
    error: float,
) -> str | None:
    """Return why a linear mean's interval misleads when the values sit in one bucket, or None.

    The closed-form mean is that of the buckets' centres; values concentrated in one
    bucket may sit anywhere in it, up to half a bucket from its centre.
    """
    share = densest(fitted)  # values piled at lo and hi sit there, not anywhere inside
    half = float(to_value(np.array([1.0]))[0] - to_value(np.array([0.0]))[0]) / len(fitted) / 2
    if share < MEAN_CONCENTRATION * peak or half <= MEAN_SLACK * error:
        return None
    return (
        f"most values concentrate in one bucket (its reconstruction holds {share / peak:.0%} "
        "of one repeated value's): the mean is known only to within half a bucket "
        f"(± {half:.6g}), more than its interval allows"
    )
