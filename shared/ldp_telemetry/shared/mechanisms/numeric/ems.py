"""EMS, the reconstruction Square Wave answers used to come from, kept as a yardstick.

EMS (Li et al., SIGMOD 2020) is EM on the exact channel P(output | bucket) with a binomial [1, 2,
1]/4 smoothing of the estimate after every step (the two end buckets left out: clipped values pile
up there), from the uniform distribution until the log-likelihood gains less than ``TOLERANCE`` per
report. It blurs one repeated value over about a dozen buckets whatever n is;
:mod:`numeric_estimate` judges whether values concentrate about as tightly as Square Wave resolves
by EMS's fit of them against EMS's fit of one value (:func:`single_value_peak`), the thresholds
having been set on it (``python -m simulations coverage``). The answers themselves come from
:mod:`numeric_spline`: EMS left mass in the empty far tail and put a lognormal's p99 10.5 % off on
average (simulations/README.md).
"""

from __future__ import annotations

import functools

import numpy as np

from ldp_telemetry.shared.mechanisms.numeric.channel import Channel

# EMS (the concentration yardstick) stops once the log-likelihood gains less than this per
# report. Stopping early leaves
# mass spread into the far tail, which biases the mean up: 1e-7 gave +5.9 % on lognormal
# latencies (n = 10^5, eps = 2), 1e-10 gives +1.5 % (simulations/numeric/accuracy.py).
TOLERANCE = 1e-10
MAX_ITERATIONS = 10_000


def smooth(x: np.ndarray) -> np.ndarray:
    """Return each row convolved with [1, 2, 1]/4, the edges reflected (mass is kept)."""
    padded = np.concatenate((x[..., :1], x, x[..., -1:]), axis=-1)
    return (padded[..., :-2] + 2 * padded[..., 1:-1] + padded[..., 2:]) / 4


def smooth_inside(x: np.ndarray) -> np.ndarray:
    """Return each row smoothed but for its two end buckets, which are left as they are.

    Values clipped to the range pile up in the end buckets: smoothing them with their
    neighbours spread 5 % clipped at each end over the last few buckets and pulled p95 and
    p99 down by 6 standard errors.
    """
    return np.concatenate((x[..., :1], smooth(x[..., 1:-1]), x[..., -1:]), axis=-1)


def ems(channel: Channel, counts: np.ndarray) -> np.ndarray:
    """Return the bucket distribution(s) EMS fits to output ``counts`` (one fit per row).

    Every fit starts from the uniform distribution and stops on its own log-likelihood
    gain, so a bootstrap refit is the same procedure as the fit it measures (refits
    started from the fitted answer stopped after a few steps and halved the SE).
    """
    observed = np.atleast_2d(np.asarray(counts, dtype=float))
    totals = observed.sum(axis=1, keepdims=True)
    observed = observed / np.where(totals > 0, totals, 1.0)
    x = np.full((len(observed), channel.buckets), 1.0 / channel.buckets)
    active = np.flatnonzero(totals[:, 0] > 0)
    previous = np.full(len(active), -np.inf)
    fitted = channel.forward(x[active])
    for _ in range(MAX_ITERATIONS):
        if not len(active):
            break
        seen = observed[active]
        ratio = np.divide(seen, fitted, where=fitted > 0, out=np.zeros_like(fitted))
        part = smooth_inside(x[active] * channel.backward(ratio))
        part /= part.sum(axis=1, keepdims=True)
        x[active] = part
        fitted = channel.forward(part)
        likelihood = (seen * np.log(np.maximum(fitted, 1e-300))).sum(axis=1)
        going = likelihood - previous >= TOLERANCE
        active, previous, fitted = active[going], likelihood[going], fitted[going]
    return x[0] if np.ndim(counts) == 1 else x


@functools.lru_cache(maxsize=64)
def single_value_peak(channel: Channel) -> float:
    """Return the largest share EMS puts in one bucket when every device holds one value.

    The middle bucket's exact output distribution, fitted: EMS's blur of a single value,
    the same at any n (a noisy fit of 10^4 such reports peaks within 3 % of it).
    """
    return float(ems(channel, channel.forward(spike(channel.buckets))).max())


def spike(buckets: int) -> np.ndarray:
    """Return the distribution of one value: all in the middle bucket."""
    out = np.zeros(buckets)
    out[buckets // 2] = 1.0
    return out
