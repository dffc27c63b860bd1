"""Percentiles of a reconstruction: piles at the range's ends, and the doubts about them."""

from __future__ import annotations

import numpy as np
import pytest

from shared.mechanisms.numeric_shape import doubt, end_piles, percentile


def test_an_end_buckets_excess_sits_on_the_range_end() -> None:
    even = np.full(10, 0.09)
    piled = even.copy()
    piled[-1] += 0.1  # 10 % clipped to hi, on top of an even spread
    assert end_piles(piled) == (0.0, pytest.approx(0.1))
    assert percentile(piled, 0.95) == 1.0  # inside the pile: hi itself
    assert percentile(piled, 0.5) == pytest.approx(0.5 / 0.9)
    assert percentile(even / 0.9, 0.5) == pytest.approx(0.5)  # no pile: linear in buckets


def test_doubts_name_a_pile_and_a_gap() -> None:
    d = 20
    bimodal = np.zeros(d)
    bimodal[[4, 15]] = 0.5
    bimodal += 1e-4
    bimodal /= bimodal.sum()
    assert "pile" in str(doubt(bimodal, 0.99, 1.0))
    assert "gap" in str(doubt(bimodal, 0.5, 0.5))
    assert doubt(bimodal, 0.1, 0.22) is None  # inside a mode
    assert doubt(np.full(d, 1 / d), 0.5, 0.5) is None
