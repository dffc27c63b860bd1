"""A breakdown row's Square Wave answer: refits stepped from the row's own fits (issue 38)."""

from __future__ import annotations

import numpy as np
import pytest

from ldp_telemetry.shared.mechanisms.numeric import pspline, refits
from ldp_telemetry.shared.mechanisms.numeric.mechanism import NumericSums, SquareWave
from ldp_telemetry.shared.mechanisms.numeric.shape import percentile

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


def test_stepped_refits_spread_as_searched_ones() -> None:
    # The same 40 seeded draws, refitted by full searches and by held steps: their
    # percentiles spread alike (40 refits' SD is itself uncertain by about 11 %, and a
    # refit's λ may differ; one step without the search's λ spread 0.3-0.8 times as much).
    rng = np.random.default_rng(3)
    counts = np.asarray(sums_of(lognormal(rng, 5_000), rng).table[0], dtype=float)
    anchor = pspline.search(SW.channel, counts)
    fitted = anchor.fits[anchor.best]
    key = counts.astype("<i8").tobytes()
    full = refits.refit(SW.channel, fitted, 5_000, key, refits.BOOTSTRAP)
    stepped = refits.refit(SW.channel, fitted, 5_000, key, refits.BOOTSTRAP, anchor)
    for q in (0.25, 0.5, 0.9):
        a = np.std([percentile(best, q) for best, _ in full], ddof=1)
        b = np.std([percentile(best, q) for best, _ in stepped], ddof=1)
        assert 0.65 < b / a < 1.5, q


def test_a_rows_intervals_hold_its_truth() -> None:
    # 16 seeded rows of 2,000 devices: the median's SE against its estimates' spread, and
    # its intervals against the truth (python -m simulations.coverage.numeric_rows
    # --as-row measures it at length).
    rng = np.random.default_rng(2026)
    truth = np.median(lognormal(np.random.default_rng(0), 1_000_000))
    found = []
    for _ in range(16):
        rows = SW.estimate_rows([sums_of(lognormal(rng, 2_000), rng)], ["p50"])[0]
        found.append((rows.estimate[0], rows.std_error[0]))
    estimates, errors = (np.array(column) for column in zip(*found, strict=True))
    ratio = np.sqrt(np.mean(errors**2)) / np.std(estimates, ddof=1)
    assert 0.75 < ratio < 1.6
    assert np.sum(np.abs(estimates - truth) <= 1.96 * errors) >= 14
