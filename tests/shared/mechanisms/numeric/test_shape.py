"""Percentiles of a reconstruction: piles at the range's ends, and the doubts about them."""

from __future__ import annotations

import numpy as np
import pytest

from ldp_telemetry.shared.mechanisms.numeric import ems
from ldp_telemetry.shared.mechanisms.numeric.doubt import PILE_REACH, pile_doubt
from ldp_telemetry.shared.mechanisms.numeric.mechanism import SquareWave
from ldp_telemetry.shared.mechanisms.numeric.shape import (
    CONCENTRATION,
    GAP_MODE,
    densest,
    doubt,
    end_piles,
    percentile,
    pile_shares,
)


def test_an_end_buckets_excess_sits_on_the_range_end() -> None:
    even = np.full(10, 0.09)
    piled = even.copy()
    piled[-1] += 0.1  # 10 % clipped to hi, on top of an even spread
    assert end_piles(piled) == (0.0, pytest.approx(0.1))
    assert percentile(piled, 0.95) == 1.0  # inside the pile: hi itself
    assert percentile(piled, 0.5) == pytest.approx(0.5 / 0.9)
    assert percentile(even / 0.9, 0.5) == pytest.approx(0.5)  # no pile: linear in buckets
    assert densest(piled) == pytest.approx(0.09)  # the pile is not a concentration


def test_doubts_name_a_pile_and_a_gap() -> None:
    d = 30
    bimodal = np.zeros(d)
    bimodal[[4, 5, 6, 22, 23, 24]] = 1 / 6  # modes five times an even spread
    bimodal += 1e-4
    bimodal /= bimodal.sum()
    peak = 1.0  # no concentration doubt here
    assert "pile" in str(doubt(bimodal, 0.99, 1.0, peak))
    assert "gap" in str(doubt(bimodal, 0.5, 0.5, peak))
    assert doubt(bimodal, 0.1, 0.22, peak) is None  # inside a mode
    assert doubt(np.full(d, 1 / d), 0.5, 0.5, peak) is None


def test_noise_in_an_even_spread_is_no_gap() -> None:
    rng = np.random.default_rng(3)
    thin = 0
    for _ in range(20):
        bumpy = np.full(256, 1 / 256) * rng.uniform(0.45, 1.55, 256)  # buckets ±55 %
        bumpy /= bumpy.sum()
        for q in (0.3, 0.5, 0.7):
            unit = percentile(bumpy, q)
            thin += bumpy[int(unit * 256)] * 256 < 0.5  # what the old, one-bucket test flagged
            assert doubt(bumpy, q, unit, 0.1) is None
    assert thin >= 1


def _two_bumps(d: int, sd: float) -> np.ndarray:
    x = np.arange(d)
    bumps = np.exp(-0.5 * ((x - d / 4) / sd) ** 2) + np.exp(-0.5 * ((x - 3 * d / 4) / sd) ** 2)
    return bumps / bumps.sum()


def test_a_dip_between_masses_no_denser_than_an_even_spread_is_no_gap() -> None:
    d = 64
    low = _two_bumps(d, 8.0)  # thin in the middle, its sides under GAP_MODE times even
    assert low[d // 2] < 0.6 * low.max() and low.max() * d < GAP_MODE
    assert doubt(low, 0.5, percentile(low, 0.5), 1.0) is None
    modes = _two_bumps(d, 4.0)  # sides about three times an even spread
    assert "gap" in str(doubt(modes, 0.5, percentile(modes, 0.5), 1.0))  # no concentration
    x = np.arange(d)
    uneven = 0.57 * np.exp(-0.5 * ((x - 16) / 3) ** 2) + 0.43 * np.exp(-0.5 * ((x - 48) / 3) ** 2)
    uneven /= uneven.sum()  # the median on the lower mode's edge, a few points short of the gap
    unit = percentile(uneven, 0.5)
    assert unit < 0.32 and uneven[int(unit * d)] * d > 1.0
    assert "gap" in str(doubt(uneven, 0.5, unit, 1.0))


def _refits(fitted: np.ndarray, rng: np.random.Generator, wiggle: float) -> np.ndarray:
    """Return 40 refits scattered around ``fitted`` by ± ``wiggle`` (relative, per bucket)."""
    refits = fitted * rng.uniform(1 - wiggle, 1 + wiggle, (40, len(fitted)))
    return refits / refits.sum(axis=1, keepdims=True)


def test_a_percentile_closer_to_an_end_than_its_piles_reach_is_doubted() -> None:
    piled = np.r_[np.full(63, 0.97 / 63), 0.03]  # 3 % at hi, over about 1.5 % per bucket
    rng = np.random.default_rng(4)
    noisy = _refits(piled, rng, 0.6)
    pile = float(pile_shares(piled, 1)[0, 1])
    noise = float(np.std(pile_shares(noisy, 1)[:, 1], ddof=1))
    assert 0.005 < noise < 0.02
    reach = pile + PILE_REACH * noise
    inside, outside = 1 - 0.95 * reach, 1 - 1.05 * reach  # values beyond them: 0.95, 1.05 reach
    window = 40  # half of it: 20 buckets, 0.31 of the range
    assert "piled" in str(pile_doubt(piled, noisy, inside, inside, window))
    assert pile_doubt(piled, noisy, outside, outside, window) is None
    assert pile_doubt(piled, noisy, inside, inside, 4) is None  # further than half the window
    sharp = _refits(piled, rng, 0.02)
    assert pile_doubt(piled, sharp, 0.96, 0.96, window) is None  # a pile known to within 0.1 %


def test_values_as_concentrated_as_one_value_are_doubted_and_smooth_ones_not() -> None:
    sw = SquareWave(epsilon=1.0, lo=0.0, hi=100.0, buckets=64, scale="linear")
    peak = ems.single_value_peak(sw.channel)
    spike = np.zeros(64)
    spike[32] = 1.0
    blurred = ems.ems(sw.channel, sw.channel.forward(spike))  # what EMS makes of one value
    assert densest(blurred) == pytest.approx(peak)
    assert "concentrate" in str(doubt(blurred, 0.5, percentile(blurred, 0.5), peak))
    wide = np.exp(-0.5 * ((np.arange(64) - 32) / 12.0) ** 2)  # sd 12 buckets
    wide /= wide.sum()
    assert densest(wide) < CONCENTRATION * peak
    assert doubt(wide, 0.5, percentile(wide, 0.5), peak) is None
