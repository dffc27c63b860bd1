"""A tail percentile's SE no smaller than Square Wave resolves the tail (issue 39, part 5)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ldp_telemetry.shared.mechanisms.numeric import estimate
from ldp_telemetry.shared.mechanisms.numeric import statistics as st
from ldp_telemetry.shared.mechanisms.numeric.mechanism import SquareWave
from ldp_telemetry.shared.mechanisms.numeric.shape import end_piles, percentile, share_below

# Output counts of one run of the coverage case (python -m simulations.coverage.numeric_rows
# --seed 7 --settings 4 --populations lognormal, its 10th run): 10,000 devices of a lognormal
# (median 20, σ 0.5; its p95 45.505) at ε = 1 over 128 buckets of [0, 100]. Its fit puts the
# tail steeply: p95 40.68 with a refit SE of 2.08, an interval that missed the truth.
COUNTS = """
    25 39 32 38 41 30 39 28 25 35 35 30 37 31 45 33 34 57 53 54 57 64 51 56 67 68 61 68 58
    57 75 66 67 70 74 61 55 74 74 84 66 88 88 86 76 71 93 99 73 97 88 61 89 101 83 88 78 84
    72 83 74 67 96 90 81 94 104 89 84 97 103 70 85 100 75 86 91 83 73 90 74 90 73 91 58 53
    67 69 69 70 66 56 64 53 50 64 60 66 50 49 50 50 42 51 60 33 47 53 45 46 47 38 40 45 33
    43 38 38 33 44 29 25 34 30 31 45 30 23 27 25 25 33 32 30 40 34 28 34 21 35 29 33 32 35
    45 29 33 33 45 32 45 30 37 33 38 33 41 31 34 33 22 35 23 27 41 33 36 26 31 26 35 34 30
    35 35 41 32 37 36 33 32 24 35 34 29 29 32 40 26 26 37 23 24 37
"""
THIN_TAIL = [int(count) for count in COUNTS.split()]
P95 = 45.505  # the lognormal's p95 (of 4 million draws)


def test_share_below_inverts_the_percentile() -> None:
    rng = np.random.default_rng(5)
    for _ in range(20):
        distribution = rng.dirichlet(np.full(64, 0.7))
        distribution[[0, -1]] += rng.uniform(0, 0.05, 2)  # piles at the ends
        distribution /= distribution.sum()
        low, high = end_piles(distribution)
        for q in np.linspace(0.01, 0.99, 25):
            if low < q < 1 - high:
                assert share_below(distribution, percentile(distribution, q)) == pytest.approx(q)
    assert share_below(distribution, 0.0) == pytest.approx(low)
    assert share_below(distribution, 1.0) == pytest.approx(1 - high)


def tail(scale: float, offset: float = 0.0, buckets: int = 128) -> np.ndarray:
    """Return a bucket distribution flat up to 0.4 (+ offset), then falling as exp(-x/scale)."""
    u = (np.arange(buckets) + 0.5) / buckets
    density = np.where(u < 0.4 + offset, 1.0, np.exp(-(u - 0.4 - offset) / scale))
    return density / density.sum()


@pytest.mark.parametrize("scale", [0.01, 0.2])
def test_only_a_tail_steeper_than_resolved_is_widened(scale: float) -> None:
    # Refits that move the whole shape a little: the share below the fit's p95 spreads, and the
    # steep tail turns that into a small spread of the percentile.
    half, q = 0.26, 0.95
    rng = np.random.default_rng(8)
    fitted = tail(scale)
    refits = np.array([tail(scale, offset) for offset in rng.normal(0, 0.01, 40)])
    units = np.array([percentile(fit, q) for fit in refits])
    shares = [share_below(fit, percentile(fitted, q)) for fit in refits]
    least = np.std(shares, ddof=1) * st.RESOLVED_TAIL * half / (1 - q)
    error = np.std(units, ddof=1) * 100.0  # in a task's units, [0, 100]
    widened = st.resolved_error(error, fitted, refits, q, half)
    assert widened >= error
    if scale * np.log(20) < st.RESOLVED_TAIL * half:  # 5 % of values within the scale's reach
        assert widened == pytest.approx(least * 100.0) and widened > 1.5 * error
    else:
        assert widened == error
    with pytest.MonkeyPatch.context() as patch:  # a share measured well enough: resolved
        patch.setattr(st, "RESOLVED_SHARE", 10.0)
        assert st.resolved_error(error, fitted, refits, q, half) == error
    # the median's share is never that steep; a lower tail is judged by its own share
    assert st.resolved_error(1.0, fitted, refits, 0.5, half) == 1.0
    low = st.resolved_error(error, fitted[::-1], refits[:, ::-1], 1 - q, half)
    assert low == pytest.approx(widened)


def test_a_narrow_modes_steep_flank_is_not_widened(monkeypatch: pytest.MonkeyPatch) -> None:
    # Two modes of SD 0.04 at 0.25 and 0.75: the p90 lies on the upper mode's flank, 0.03
    # from its top (a tenth of b), steep because the mode is, which the reports resolve.
    u = (np.arange(64) + 0.5) / 64
    rng = np.random.default_rng(9)

    def modes(shift: float) -> np.ndarray:
        density = np.exp(-0.5 * ((u - 0.25) / 0.04) ** 2) + np.exp(
            -0.5 * ((u - 0.75 - shift) / 0.04) ** 2
        )
        return density / density.sum()

    fitted = modes(0.0)
    refits = np.array([modes(shift) for shift in rng.normal(0, 0.01, 40)])
    assert st.from_mode(fitted, percentile(fitted, 0.9), True) < st.TAIL_REACH * 0.25
    assert st.resolved_error(0.8, fitted, refits, 0.9, 0.25) == 0.8
    monkeypatch.setattr(st, "TAIL_REACH", 0.0)  # judged as a tail, it would be
    assert st.resolved_error(0.8, fitted, refits, 0.9, 0.25) > 1.5 * 0.8


def _thin_tail_rows() -> dict[str, Any]:
    sw = SquareWave(epsilon=1.0, lo=0.0, hi=100.0, buckets=128, scale="linear")
    sums = sw.new_sums()
    sums.load(np.array([10_000]), np.array([THIN_TAIL]))
    return {row["value"]: row for row in sw.estimate(sums, ["p50", "p95"]).rows()}


def test_a_thin_tailed_fits_p95_interval_holds_the_truth(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _thin_tail_rows()
    # The same answer without the rule (the refits' spread and the bias bound only), compared
    # in the same run: the bootstrap's draws may differ between numpy versions, the rule's
    # effect on them may not.
    monkeypatch.setattr(estimate, "resolved_error", lambda error, *_: error)
    before = _thin_tail_rows()
    p95, old = rows["p95"], before["p95"]
    assert p95["estimate"] == old["estimate"] == pytest.approx(40.68, abs=0.01)  # the fit
    # Without the rule this run's interval missed the truth (44.76 < 45.505 with numpy 2's
    # draws; numpy 1.24's refits, other draws, reach 45.87): not asserted, it is the draws'.
    assert p95["reliable"] and p95["ci_low"] <= P95 <= p95["ci_high"]
    assert p95["std_error"] > 1.5 * old["std_error"]
    assert rows["p50"]["std_error"] == before["p50"]["std_error"]  # no steep tail: unchanged
