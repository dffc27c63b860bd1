"""Differences of two estimates, their p-values and Holm's step-down, against hand-computed
cases and scipy."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import norm

from ldp_telemetry.shared.breakdowns.comparison import (
    Side,
    compare_values,
    difference,
    holm_adjusted,
    holm_significant,
    two_sided_p,
)

Z95 = 1.959963984540054


def test_difference_of_independent_estimates_by_hand() -> None:
    # 0.30 ± 0.03 against 0.25 ± 0.04: d = 0.05, SE = √(0.03² + 0.04²) = 0.05, z = 1.
    d = difference(0.30, 0.03, 0.25, 0.04)
    assert d.difference == pytest.approx(0.05, abs=1e-15)
    assert d.std_error == pytest.approx(0.05, abs=1e-15)
    assert d.ci_low == pytest.approx(0.05 - Z95 * 0.05, abs=1e-15)
    assert d.ci_high == pytest.approx(0.05 + Z95 * 0.05, abs=1e-15)
    assert d.p_value == pytest.approx(0.31731050786291415, rel=1e-14)  # 2·(1 − Φ(1))


def test_interval_follows_the_level() -> None:
    d = difference(3.0, 1.2, 1.0, 0.5, level=0.99)
    assert d.std_error == pytest.approx(1.3, rel=1e-15)
    assert d.ci_high - d.difference == pytest.approx(2.5758293035489004 * 1.3, rel=1e-14)


@pytest.mark.parametrize("z", [0.0, 0.1, 1.0, 1.96, 2.5, 5.0, 10.0, 30.0, -3.0])
def test_p_values_match_scipy_far_into_the_tail(z: float) -> None:
    assert two_sided_p(z * 0.7, 0.7) == pytest.approx(2.0 * norm.sf(abs(z)), rel=1e-12)


def test_p_value_edges() -> None:
    assert two_sided_p(0.0, 0.0) == 1.0
    assert two_sided_p(0.5, 0.0) == 0.0
    with pytest.raises(ValueError, match="standard errors"):
        difference(1.0, -0.1, 0.0, 0.1)
    with pytest.raises(ValueError, match="standard errors"):
        difference(1.0, math.inf, 0.0, 0.1)


@pytest.mark.parametrize(
    ("p_values", "adjusted", "significant"),
    [
        # sorted 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06 (stops), 0.04·1 → max = 0.06
        ([0.01, 0.04, 0.03, 0.005], [0.03, 0.06, 0.06, 0.02], [True, False, False, True]),
        # Bonferroni (0.025 each) keeps only the first; Holm's second step tests 0.04 at 0.05
        ([0.01, 0.04], [0.02, 0.04], [True, True]),
        # the first step fails (0.03 > 0.05/3), so none is significant though 0.03 < 0.05
        ([0.03, 0.03, 0.03], [0.09, 0.09, 0.09], [False, False, False]),
        # a tie with the threshold: 0.025·2 = 0.05 is rejected at α = 0.05
        ([0.025, 0.5], [0.05, 0.5], [True, False]),
        ([0.9, 0.6], [1.0, 1.0], [False, False]),  # capped at 1
        ([], [], []),
    ],
)
def test_holm_by_hand(
    p_values: list[float], adjusted: list[float], significant: list[bool]
) -> None:
    assert holm_adjusted(p_values) == pytest.approx(adjusted, abs=1e-15)
    assert holm_significant(p_values, 0.05) == significant


def step_down(p_values: list[float], alpha: float) -> list[bool]:
    """Holm's procedure as the 1979 paper states it: reject in order while p_(i) ≤ α/(m−i+1)."""
    m = len(p_values)
    rejected = [False] * m
    for rank, index in enumerate(sorted(range(m), key=lambda i: p_values[i])):
        if p_values[index] > alpha / (m - rank):
            break
        rejected[index] = True
    return rejected


@given(
    st.lists(st.floats(min_value=0.0, max_value=1.0), max_size=30),
    st.sampled_from([0.01, 0.05, 0.1]),
)
def test_adjusted_p_values_reject_what_the_step_down_rejects(
    p_values: list[float], alpha: float
) -> None:
    # Away from the float-rounding boundary p·k = α the two forms agree exactly.
    if any(abs(p * k - alpha) < 1e-12 for p in p_values for k in range(1, 31)):
        return
    assert holm_significant(p_values, alpha) == step_down(p_values, alpha)


def test_holm_refuses_what_is_not_a_p_value() -> None:
    with pytest.raises(ValueError, match="p-values"):
        holm_adjusted([0.1, 1.5])
    with pytest.raises(ValueError, match="alpha"):
        holm_significant([0.1], 0.0)


def test_compare_values_leaves_doubtful_intervals_out_of_the_family() -> None:
    # Three values; the second's interval cannot be trusted, so Holm's family has two.
    a = [Side(0.50, 0.01), Side(10.0, 1.0, "in a gap between modes"), Side(0.20, 0.01)]
    b = [Side(0.45, 0.01), Side(2.0, 1.0), Side(0.19, 0.01)]
    rows = compare_values(["x", "p50", "y"], a, b, alpha=0.05)
    assert [row.value for row in rows] == ["x", "p50", "y"]
    p_x = math.erfc(0.05 / math.hypot(0.01, 0.01) / math.sqrt(2.0))
    p_y = math.erfc(0.01 / math.hypot(0.01, 0.01) / math.sqrt(2.0))
    assert rows[0].adjusted_p == pytest.approx(2 * p_x, rel=1e-12)
    assert rows[0].significant
    assert rows[1].adjusted_p is None and not rows[1].significant
    assert rows[1].untested == "not tested: in a gap between modes"
    assert rows[1].difference.difference == pytest.approx(8.0)
    assert rows[2].adjusted_p == pytest.approx(max(2 * p_x, p_y), rel=1e-12)
    assert not rows[2].significant
    with pytest.raises(ValueError, match="one estimate per value"):
        compare_values(["x"], a, b)
