"""A breakdown row's Square Wave answer: the same refit searches, side by side (issue 38)."""

from __future__ import annotations

import numpy as np
import pytest

from ldp_telemetry.shared.mechanisms.numeric import ems, held, pspline, refits
from ldp_telemetry.shared.mechanisms.numeric import estimate as est
from ldp_telemetry.shared.mechanisms.numeric.mechanism import NumericSums, SquareWave
from ldp_telemetry.shared.mechanisms.numeric.shape import percentile, pile_shares

SW = SquareWave(epsilon=2.0, lo=0.0, hi=100.0, buckets=128, scale="linear")


def sums_of(values: np.ndarray, rng: np.random.Generator) -> NumericSums:
    sums = SW.new_sums()
    sums.add_many(SW.privatize_many(values, rng))
    return sums


def lognormal(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.clip(np.exp(rng.normal(np.log(30.0), 0.4, n)), 0.0, 100.0)


def test_a_row_keeps_the_fit_and_is_the_same_for_the_same_sums() -> None:
    rng = np.random.default_rng(38)
    sums = sums_of(lognormal(rng, 3_000), rng)
    full = SW.estimate(sums).rows()
    row, again = (SW.estimate_rows([sums])[0].rows() for _ in range(2))
    assert row == again  # the refits are seeded by the row's counts
    assert [r["estimate"] for r in row] == [r["estimate"] for r in full]  # the same fit
    for mine, theirs in zip(row, full, strict=True):
        assert mine["std_error"] == pytest.approx(theirs["std_error"], rel=0.35)
        assert "reliable" in mine


def test_rows_estimated_together_equal_each_alone() -> None:
    rng = np.random.default_rng(7)
    many = [sums_of(lognormal(rng, n), rng) for n in (500, 2_000)] + [SW.new_sums()]
    together = [r.rows() for r in SW.estimate_rows(many)]
    alone = [SW.estimate_rows([sums])[0].rows() for sums in many]
    assert together == alone
    assert all(row["reliable"] is False for row in together[2])  # no reports


@pytest.mark.parametrize("seed", [1, 2])
def test_a_rows_refits_are_the_full_searches_of_the_same_draws(seed: int) -> None:
    # Values piled at both ends (5 % clipped each way, eps = 1 over 64 buckets): where four
    # held steps under-varied (a p95 spread 0.1-0.3 times a full search's), the row's
    # searches reach the same fits as full ones for most draws, so their percentiles and
    # piles spread alike near both ends and their λ searches stop alike.
    sw = SquareWave(epsilon=1.0, lo=0.0, hi=100.0, buckets=64, scale="linear")
    rng = np.random.default_rng(seed)
    sums = sw.new_sums()
    sums.add_many(sw.privatize_many(np.clip(rng.uniform(-5.5, 105.5, 2_000), 0.0, 100.0), rng))
    counts = np.asarray(sums.table[0], dtype=float)
    fitted = pspline.select(sw.channel, counts)[0]
    key = counts.astype("<i8").tobytes()
    full = refits.refit(sw.channel, fitted, 2_000, key, refits.BOOTSTRAP)
    row = refits.refit(sw.channel, fitted, 2_000, key, refits.BOOTSTRAP, row=True)
    for q in (0.02, 0.05, 0.5, 0.95, 0.98):
        a = np.array([percentile(best, q) for best, _ in full])
        b = np.array([percentile(best, q) for best, _ in row])
        assert 0.85 < np.std(b, ddof=1) / np.std(a, ddof=1) < 1.15, q
        assert np.median(np.abs(a - b)) < 0.05 * np.std(a, ddof=1), q
    piles = [pile_shares(np.array([best for best, _ in fits]), 1) for fits in (full, row)]
    ratio = np.std(piles[1], axis=0, ddof=1) / np.std(piles[0], axis=0, ddof=1)
    assert np.all((ratio > 0.85) & (ratio < 1.15))
    assert np.mean([len(a) == len(b) for (_, a), (_, b) in zip(full, row, strict=True)]) >= 0.75


def test_the_totals_never_take_a_rows_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # The totals' answer is the full one (bit for bit main's: the refits are full
    # searches), and an EMS screen made in one EM with others answers as one made alone.
    rng = np.random.default_rng(11)
    sums = sums_of(lognormal(rng, 2_000), rng)
    before = SW.estimate(sums).rows()

    def refused(*_: object) -> None:
        raise AssertionError("the totals took a row's refits")

    monkeypatch.setattr(held, "refit", refused)
    assert SW.estimate(sums).rows() == before
    counts = np.asarray(sums.table[0])
    other = np.asarray(sums_of(lognormal(rng, 500), rng).table[0])
    screen = ems.ems(SW.channel, np.array([other, counts], dtype=float))[1]
    screened = est.answer(
        SW.channel, counts, est.DEFAULT_QUERY, SW.to_value, True, 0.95, screen=screen
    )
    assert screened.rows() == before


def test_a_rows_intervals_hold_its_truth() -> None:
    # 12 seeded rows of 2,000 devices: the median's SE against its estimates' spread, and
    # its intervals against the truth (python -m simulations.coverage.numeric_rows
    # --as-row measures it at length).
    rng = np.random.default_rng(2026)
    truth = np.median(lognormal(np.random.default_rng(0), 1_000_000))
    many = [sums_of(lognormal(rng, 2_000), rng) for _ in range(12)]
    found = [(rows.estimate[0], rows.std_error[0]) for rows in SW.estimate_rows(many, ["p50"])]
    estimates, errors = (np.array(column) for column in zip(*found, strict=True))
    ratio = np.sqrt(np.mean(errors**2)) / np.std(estimates, ddof=1)
    assert 0.75 < ratio < 1.6
    assert np.sum(np.abs(estimates - truth) <= 1.96 * errors) >= 10
