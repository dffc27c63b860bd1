"""The parametric bootstrap of a numeric task's reconstruction: refits and their spread.

A refit is n reports drawn from a fitted distribution's outputs (through the exact
channel), reconstructed by the same procedure as the fit (:func:`pspline.select`, its own
smoothness). The generator is seeded by the observed counts (and what else the refits
depend on), so the same sums always give the same answer.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

import numpy as np

from ldp_telemetry.shared.mechanisms.numeric import held, pspline
from ldp_telemetry.shared.mechanisms.numeric.channel import Channel
from ldp_telemetry.shared.mechanisms.numeric.shape import percentile

BOOTSTRAP = 40  # resamples for the standard errors (and the reconstruction's bias)
PILED_REFITS = 20  # refits of a piled alternative, for a pile doubt's SE (doubt.py)


def replicates(
    channel: Channel,
    fitted: np.ndarray,
    n: int,
    measure: Callable[[np.ndarray], np.ndarray],
    counts: np.ndarray,
    row: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``measure`` on ``BOOTSTRAP`` parametric refits (rows), the refits, and each
    refit's :func:`shape_move`.

    Each resample is n reports drawn from the fitted distribution's outputs, reconstructed
    by the same procedure as the fit (its own smoothness); the generator is seeded by the
    observed ``counts``, so the same sums always give the same answer. ``row`` (a
    breakdown's row): the same searches of the same draws, side by side (:func:`held.refit`).
    """
    fits = refit(channel, fitted, n, counts.astype("<i8").tobytes(), BOOTSTRAP, row)
    boot = np.array([measure(best) for best, _ in fits])
    moves = [shape_move(b, others, measure) for b, (_, others) in zip(boot, fits, strict=True)]
    return boot, np.array([best for best, _ in fits]), np.array(moves)


def piled_refits(
    channel: Channel,
    fitted: np.ndarray,
    n: int,
    counts: np.ndarray,
    end: int,
    share: float,
    *,
    row: bool = False,
) -> np.ndarray:
    """Return ``PILED_REFITS`` refits of the fit with ``share`` of its values moved onto
    end ``end`` (0: lo, 1: hi): how the pile varies where a pile doubt's answer lives.

    Seeded by the counts, the end and the share: the same sums give the same answer.
    ``row``: searched as :func:`refit` searches a row's.
    """
    alternative = np.asarray(fitted, dtype=float) * (1.0 - share)
    alternative[-1 if end else 0] += share
    key = counts.astype("<i8").tobytes() + np.array([end, share], "<f8").tobytes()
    fits = refit(channel, alternative, n, key, PILED_REFITS, row)
    return np.array([best for best, _ in fits])


def refit(
    channel: Channel,
    distribution: np.ndarray,
    n: int,
    key: bytes,
    size: int,
    row: bool = False,
) -> list[tuple[np.ndarray, list[np.ndarray]]]:
    """Return :func:`pspline.select` on ``size`` draws of n reports from
    ``distribution``'s outputs, the generator seeded by ``key`` (the same sums, the same
    answer); ``row``: the same searches side by side, each λ's fits started from the
    search of the draws' expected counts (:func:`held.refit`)."""
    rng = np.random.default_rng(int.from_bytes(hashlib.sha256(key).digest()[:8], "little"))
    outputs = channel.forward(distribution)
    draws = rng.multinomial(n, outputs / outputs.sum(), size=size)
    if row and channel.buckets >= pspline.FEWEST:  # the draws' centre: their expected counts
        return held.refit(channel, pspline.search(channel, n * outputs / outputs.sum()), draws)
    return [pspline.select(channel, draw.astype(float)) for draw in draws]


def shape_move(
    values: np.ndarray, others: Sequence[np.ndarray], measure: Callable[[np.ndarray], np.ndarray]
) -> np.ndarray:
    """Return, per statistic, the largest move from ``values`` among the less smoothed fits."""
    if not others:
        return np.zeros(len(values))
    moves = np.array([measure(other) - values for other in others])
    return moves[np.argmax(np.abs(moves), axis=0), np.arange(len(values))]


def unit_spread(
    fitted: np.ndarray,
    refits: np.ndarray,
    q: float,
    to_value: Callable[[np.ndarray], np.ndarray],
) -> tuple[float, float]:
    """Return the q-quantile's SE and bootstrap bias, measured in unit space, in the task's units.

    On a log scale the refits' quantiles are skewed in the task's units (a few refits'
    p99 at the range's end made its SE 1.65 times the estimates' spread); their spread in
    unit space is taken through the slope of the scale at the estimate.
    """
    unit = percentile(fitted, q)
    units = np.array([percentile(fit, q) for fit in refits])
    step = 1e-6
    ends = np.clip(np.array([unit - step, unit + step]), 0.0, 1.0)
    points = to_value(ends)
    slope = float(points[1] - points[0]) / float(ends[1] - ends[0])
    return float(np.std(units, ddof=1)) * slope, float(np.mean(units) - unit) * slope
