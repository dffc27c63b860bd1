"""dimensions: per-slice intervals cover, Holm keeps the family-wise error at α on equal
slices (uncorrected tests do not), and a planted 2-point difference is found at n = 10^5."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from simulations.breakdowns import dimensions, periods
from simulations.common.settings import RunSettings

SMALL = dimensions.Sizes(sizes=(100_000,), reps=200)
# 2.5 Monte-Carlo sd of a rate α over SMALL.reps runs: the room an estimated rate gets.
SLACK = 2.5 * (dimensions.ALPHA * (1 - dimensions.ALPHA) / SMALL.reps) ** 0.5


@pytest.fixture(scope="module")
def rows() -> list[dimensions.Row]:
    return dimensions.compute(SMALL, seed=38)


def test_per_slice_and_difference_intervals_cover(rows: list[dimensions.Row]) -> None:
    for row in rows:  # 200 runs × 2 slices × 2–8 answers: Monte-Carlo sd below 0.01
        assert abs(row.coverage - 0.95) < 0.03, row
        assert abs(row.difference_coverage - 0.95) < 0.03, row


def test_holm_keeps_the_family_wise_error_at_alpha(rows: list[dimensions.Row]) -> None:
    for row in rows:  # at most α by theorem; simulated, within its Monte-Carlo error
        assert row.fwer_holm <= dimensions.ALPHA + SLACK, row
        assert row.fwer_planted <= dimensions.ALPHA + SLACK, row
    for row in rows:
        if row.kind != "rr":  # 8 tests uncorrected: about 1 − 0.95^8 = 0.34 (correlated)
            assert row.fwer_uncorrected > 0.15, row


def test_a_planted_two_point_difference_is_found(rows: list[dimensions.Row]) -> None:
    for row in rows:
        assert row.power >= 0.9, row
        assert row.power >= row.power_theory - 0.05, row  # Holm is never below Bonferroni


def test_counts_and_power_floor_by_hand() -> None:
    counts = dimensions.counts_of(dimensions.SHARES, 1_001)
    assert counts.sum() == 1_001 and np.all(
        np.abs(counts - np.array(dimensions.SHARES) * 1_001) < 1
    )
    # No difference: the floor is the chance of a Bonferroni false positive, α / tests.
    assert dimensions.power_bound(0.0, 0.01, 8) == pytest.approx(dimensions.ALPHA / 8, rel=1e-12)
    assert dimensions.planted(dimensions.SHARES)[:2] == pytest.approx((0.32, 0.18))


def test_run_writes_plot_and_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The files and their columns, not the statistics (the tests above check those): the
    # quick run's path, at smaller sizes.
    monkeypatch.setattr(dimensions, "QUICK", dimensions.Sizes(sizes=(10_000,), reps=15))
    monkeypatch.setattr(dimensions, "QUICK_PERIODS", (2_000, 10))
    quick = RunSettings(out_dir=tmp_path, quick=True, show_progress=False, seed=3)
    names = sorted(path.name for path in dimensions.run(quick))
    assert names == [
        "dimensions.csv", "dimensions.md", "dimensions.png",
        "dimensions_periods.csv", "dimensions_periods.md",
    ]  # fmt: skip


def test_two_longitudinal_periods_are_compared_conservatively() -> None:
    # The same devices and permanent responses in both periods: positively correlated
    # estimates, so the comparison's SE is at least the difference's true SD (within the
    # Monte-Carlo error of an SD over 150 runs, about 6%), and its intervals cover.
    for row in periods.compute(5_000, 150, seed=38):
        assert row.se_over_sd > 0.94, row
        assert row.cauchy_schwarz_over_sd > row.se_over_sd, row
        assert row.coverage >= 0.95 - 0.02 and row.fwer_holm <= dimensions.ALPHA + SLACK, row


def test_more_runs_of_equal_slices_for_the_family_wise_error() -> None:
    row = dimensions.run_one("grr", 10_000, 5, np.random.default_rng(3), null_reps=400)
    assert row.reps == 5 and row.null_reps == 400
    assert row.fwer_low <= row.fwer_holm <= row.fwer_high and row.fwer_high - row.fwer_low < 0.07
    assert row.fwer_holm * 400 == round(row.fwer_holm * 400)  # a count over the 400 runs
    assert "over every row's 400 runs" in dimensions.pooled([row])


def test_family_wise_error_theory_is_below_alpha() -> None:
    counts = dimensions.counts_of(dimensions.SHARES, 30_000)
    sidak = 1 - (1 - dimensions.ALPHA / 8) ** 8  # any correlation, normal approximation
    assert dimensions.fwer_theory("cms", counts, 0.0, 0.0) == pytest.approx(sidak)
    assert dimensions.fwer_theory("rr", counts, 0.0, 0.0) == dimensions.ALPHA / 2
    # grr at ε = 2, d = 8: p = e²/(e² + 7), q = 1/(e² + 7); shares are negatively correlated,
    # which keeps the rate below Šidák's independent-tests value, and well above α/8.
    p, q = np.exp(2) / (np.exp(2) + 7), 1 / (np.exp(2) + 7)
    grr = dimensions.fwer_theory("grr", counts, p, q, draws=1_000_000)
    assert 0.045 < grr < sidak < dimensions.ALPHA
