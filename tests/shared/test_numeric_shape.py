"""Percentiles of a reconstruction: piles at the range's ends, and the doubts about them."""

from __future__ import annotations

import numpy as np
import pytest

from shared.mechanisms import numeric_ems as ems
from shared.mechanisms.numeric import SquareWave
from shared.mechanisms.numeric_shape import CONCENTRATION, densest, doubt, end_piles, percentile


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
    d = 20
    bimodal = np.zeros(d)
    bimodal[[3, 4, 5, 14, 15, 16]] = 1 / 6
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
