"""The exact binomial interval a simulated rate is read by (simulations/common/stats.py)."""

from __future__ import annotations

import pytest
from scipy.stats import binom

from simulations.common.stats import clopper_pearson


def test_interval_ends_are_where_the_binomial_tails_are_two_and_a_half_percent() -> None:
    low, high = clopper_pearson(49, 1_000)
    assert low < 0.049 < high
    assert binom.sf(48, 1_000, low) == pytest.approx(0.025, rel=1e-9)  # P(X ≥ 49 | low)
    assert binom.cdf(49, 1_000, high) == pytest.approx(0.025, rel=1e-9)  # P(X ≤ 49 | high)


def test_edges_and_refusals() -> None:
    assert clopper_pearson(0, 10)[0] == 0.0 and clopper_pearson(10, 10)[1] == 1.0
    assert clopper_pearson(0, 10)[1] == pytest.approx(1 - 0.025 ** (1 / 10))
    for successes, trials in ((-1, 10), (11, 10), (0, 0)):
        with pytest.raises(ValueError, match="successes"):
            clopper_pearson(successes, trials)
