"""When a Square Wave answer's interval would mislead: the doubts that read the fit.

:mod:`numeric_estimate` answers every statistic from a log-spline fit and its bootstrap
refits; the tests here say when an answer must carry ``reliable: false`` and a reason a
user can act on. Each reads the privatized data only: the fit, its refits, ``peak`` (the
largest share the fit puts in one bucket when every device holds one value, the same at
any n) and Square Wave's ``window`` (how many buckets' values share an output's high
probability). Thresholds were set on ``python -m simulations coverage``'s numeric rows
(simulations/README.md).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ldp_telemetry.shared.mechanisms.numeric.shape import densest, doubt, percentile, pile_shares

# A linear mean is flagged when the fit's largest bucket holds this share of a single
# value's reconstructed peak and half a bucket exceeds MEAN_SLACK standard errors (its
# bias can reach half a bucket: +1.0 SE for a point mass on a bucket's edge at eps = 1).
MEAN_CONCENTRATION, MEAN_SLACK = 0.8, 0.3
# A percentile within half Square Wave's window of an end, with fewer values between it
# and the end than the share the fit piles there plus PILE_REACH standard errors of that
# share, may be the end itself. Measured on the log-spline's fits, (values beyond - pile)
# / the pile's SE, over 40-50 runs per row: where the truth is the end (a clipped
# population's p95 at eps = 1 and on the log setting; an audit's p98.5/p99 with 2 %
# clipped to hi, 32 buckets, eps = 2) at most 2.6, 3.0 and 3.1 (that run flagged by its
# bias); right answers overlap: a uniform's p90 at eps = 1 0.4-5.6 (median 3.4), a clipped
# log p90 1.2-7.6 (3.8), so 40-45 % of those are flagged too (at eps = 1, n = 10^4 the
# pile's SE is 3.5 points: a 10 % tail and a pile are not told apart). On the penalized
# log-spline (numeric_pspline, AIC's λ), 40 runs per row: where the truth is the end at
# most 2.58 (clipped p95, eps = 1), 1.49 (log), 2.05 and 1.24 (the audit's p98.5, p99),
# yet in the full table one clipped p95 at eps = 1 of 40 went unflagged at 3 and missed;
# right answers: 32 % and 26 % of them under 3, 55 % and 46 % under 4. With HQ's λ the
# audit's p98.5 reached 3.73.
PILE_REACH = 4.0
# A log-scale statistic that moves by more than this many SEs when each bucket's values
# are spread evenly in value instead of evenly on the log scale is flagged: the reports
# cannot say which (the limit of the reconstruction's own bias, BIAS_LIMIT).
PLACEMENT_LIMIT = 0.6


# What :func:`pile_doubt` asks of the caller: refits of the fit with ``share`` of the
# values moved onto end ``end`` (0: lo, 1: hi), each row one refit's distribution.
PiledRefits = Callable[[int, float], np.ndarray]


def percentile_doubt(
    fitted: np.ndarray,
    refits: np.ndarray,
    q: float,
    peak: float,
    window: int,
    piled: PiledRefits | None = None,
) -> str | None:
    """Return why the q-quantile's interval misleads, or None.

    :func:`numeric_shape.doubt` on the fit, then :func:`pile_doubt`.
    """
    unit = percentile(fitted, q)
    return doubt(fitted, q, unit, peak) or pile_doubt(fitted, refits, q, unit, window, piled)


def pile_doubt(
    fitted: np.ndarray,
    refits: np.ndarray,
    q: float,
    unit: float,
    window: int,
    piled: PiledRefits | None = None,
) -> str | None:
    """Return why a percentile near values piled at the range's end misleads, or None.

    Square Wave reports a value within half its ``window`` of an end much as it reports a
    value on the end, so the data barely tell a pile at the end (values clipped there)
    from values just short of it. The fit puts a pile in its end bucket (the spline's end
    term; :func:`numeric_shape.pile_shares` with a reach of one bucket), and the refits
    give that share's SE. A percentile (``unit``: its place in [0, 1]) within half the
    window of an end, with less than the pile, or less than ``PILE_REACH`` of its SEs, of
    the values between it and the end, may be the end itself. The SE is also measured
    where that doubt lives, on ``piled`` refits of the fit with the values beyond the
    percentile piled at the end, and the larger taken: refits of a fit that found the end
    empty stay pinned there (a pile SE of 0.020-0.024 where others gave 0.027-0.044), and
    an ε = 1 clipped p90 91.1 ± 1.3 passed, its truth 94.4.
    """
    pile = pile_shares(fitted, 1)[0]
    noise = np.std(pile_shares(refits, 1), axis=0, ddof=1)
    beyond = np.array([q, 1 - q])
    near = np.array([unit, 1 - unit]) * len(fitted) < window / 2
    hits = near & (beyond < np.maximum(pile, 0.0) + PILE_REACH * noise)
    if piled is not None:
        for side in np.flatnonzero(near & ~hits):
            there = pile_shares(piled(int(side), float(beyond[side])), 1)[:, side]
            noise[side] = max(noise[side], float(np.std(there, ddof=1)))
            hits[side] = beyond[side] < max(pile[side], 0.0) + PILE_REACH * noise[side]
    if not np.any(hits):
        return None
    k = int(np.argmax(hits))
    end = ("lo", "hi")[k]
    return (
        f"it is within reach of the values piled at the range's end ({beyond[k]:.1%} of "
        f"values lie between it and {end}; the share clipped to {end} is "
        f"{max(pile[k], 0.0):.1%} ± {noise[k]:.1%}): it may be the range's end itself"
    )


def concentrated_mean(
    fitted: np.ndarray,
    peak: float,
    to_value: Callable[[np.ndarray], np.ndarray],
    error: float,
) -> str | None:
    """Return why a mean's interval misleads when the values sit in one bucket, or None.

    The mean takes each bucket's values at their mean (closed form on a linear scale, the
    fit's on a log scale); values concentrated in one bucket may sit anywhere in it, up
    to half a bucket from there.
    """
    share = densest(fitted)  # values piled at lo and hi sit there, not anywhere inside
    i = int(np.argmax(fitted))  # on a log scale buckets differ in width: the densest one's
    edges = to_value(np.array([i, i + 1]) / len(fitted))
    half = float(edges[1] - edges[0]) / 2
    if share < MEAN_CONCENTRATION * peak or not bucket_matters(half, error):
        return None
    return (
        f"most values concentrate in one bucket (its reconstruction holds {share / peak:.0%} "
        "of one repeated value's): the mean is known only to within half a bucket "
        f"(± {half:.6g}), more than its interval allows"
    )


def bucket_matters(half: float, error: float) -> bool:
    """Return whether half a bucket (``half``) is wide enough, against a mean's SE, that
    values concentrated in one bucket could mislead its interval."""
    return half > MEAN_SLACK * error


def placement_doubt(shift: float, error: float) -> str | None:
    """Return why a statistic that depends on where values sit inside a bucket misleads.

    ``shift``: how far it moves between the two spreads inside a bucket
    (:func:`numeric_estimate.placement_shift`); flagged beyond ``PLACEMENT_LIMIT`` SEs.
    """
    if abs(shift) <= PLACEMENT_LIMIT * max(error, 1e-300):
        return None
    return (
        f"the buckets are coarse: spreading each bucket's values evenly in value instead of "
        f"on the log scale moves it by {shift:+.6g} ({shift / max(error, 1e-300):+.1f} "
        "standard errors); the reports cannot say where inside a bucket values sit (use "
        "more buckets)"
    )
