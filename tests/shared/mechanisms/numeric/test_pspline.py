"""The penalized log-spline (P-spline) reconstruction of Square Wave reports."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ldp_telemetry.shared.mechanisms.numeric import estimate as est
from ldp_telemetry.shared.mechanisms.numeric import pspline, refits, spline
from ldp_telemetry.shared.mechanisms.numeric.mechanism import SquareWave
from ldp_telemetry.shared.mechanisms.numeric.shape import percentile
from ldp_telemetry.shared.mechanisms.numeric.statistics import smoothing_error


def test_a_quadratic_log_density_is_not_penalized() -> None:
    pen = pspline.penalty(12)
    j = np.arange(12.0)
    quadratic = np.concatenate((3.0 - 0.5 * j + 0.2 * j**2, [4.0, -1.0]))  # and any end terms
    assert np.allclose(pen @ quadratic, 0.0)
    cubic = np.concatenate((0.01 * j**3, [0.0, 0.0]))
    assert quadratic @ pen @ quadratic < 1e-9 < cubic @ pen @ cubic


def test_a_gaussian_is_recovered_at_the_stiffest_penalty() -> None:
    sw = SquareWave(epsilon=2.0, lo=0.0, hi=1.0, buckets=128, scale="linear")
    u = (np.arange(128) + 0.5) / 128
    truth = np.exp(-0.5 * ((u - 0.4) / 0.12) ** 2)  # a quadratic log-density: no penalty
    truth /= truth.sum()
    best, others = pspline.select(sw.channel, sw.channel.forward(truth) * 1e5)
    assert np.abs(best - truth).sum() < 0.01
    assert len(others) == pspline.PATIENCE  # smaller λ tried, none better


def test_two_narrow_modes_are_not_bent_by_where_the_knots_fall() -> None:
    # Modes at 0.25 and 0.75 (SD 0.04): the knot criterion's 5 functions put their one
    # inner knot between them and skew the upper mode (p95 -0.0028, p99 -0.0064 here).
    sw = SquareWave(epsilon=2.0, lo=0.0, hi=1.0, buckets=256, scale="linear")
    u = (np.arange(256) + 0.5) / 256
    truth = np.exp(-0.5 * ((u - 0.25) / 0.04) ** 2) + np.exp(-0.5 * ((u - 0.75) / 0.04) ** 2)
    truth /= truth.sum()
    counts = sw.channel.forward(truth) * 30_000  # the expected reports of 30,000 devices

    def errors(fitted: np.ndarray) -> np.ndarray:
        return np.array([percentile(fitted, q) - percentile(truth, q) for q in (0.95, 0.99)])

    assert np.all(np.abs(errors(est.reconstruct(sw.channel, counts))) < [0.0015, 0.003])
    assert np.any(np.abs(errors(spline.select(sw.channel, counts)[0])) >= [0.0015, 0.003])


def test_fewer_buckets_than_a_cubic_fit_each_bucket() -> None:
    sw = SquareWave(epsilon=1.0, lo=0.0, hi=1.0, buckets=3, scale="linear")
    truth = np.array([0.2, 0.5, 0.3])
    best, others = pspline.select(sw.channel, sw.channel.forward(truth) * 1e5)
    assert np.allclose(best, truth, atol=1e-3) and others == []


def test_a_percentiles_se_bounds_the_smoothings_bias(monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 39: a lognormal median at ε = 1 over 128 buckets (the expected reports of
    # 10,000 devices, no noise). The criterion's fit flattens the rise from lo and pulls
    # the median up by half a unit; the least smoothed fit tried puts it back.
    sw = SquareWave(epsilon=1.0, lo=0.0, hi=100.0, buckets=128, scale="linear")
    values = np.exp(np.random.default_rng(1).normal(np.log(20.0), 0.5, 1_000_000))
    truth = np.bincount(sw.buckets_of(values), minlength=128) / len(values)
    median = float(np.median(np.clip(values, 0.0, 100.0)))
    counts = sw.channel.forward(truth) * 10_000
    best, others = pspline.select(sw.channel, counts)
    smoothed, rough = percentile(best, 0.5) * 100, percentile(others[-1], 0.5) * 100
    assert smoothed - median > 0.4 and abs(rough - median) < 0.1

    monkeypatch.setattr(refits, "BOOTSTRAP", 10)  # the same refits in both answers, fewer

    def p50() -> dict[str, Any]:
        return dict(est.answer(sw.channel, counts, ["p50"], sw.to_value, True, 0.95).rows()[0])

    row = p50()
    real = pspline.select  # the same fits, refits included, without the less smoothed ones
    monkeypatch.setattr(pspline, "select", lambda *a: (real(*a)[0], []))
    refits_only = p50()  # no move to bound: the refits' spread alone
    assert row["estimate"] == refits_only["estimate"] == smoothed
    # the move is beyond what the refits' own moves make of noise: it widens the SE
    assert row["std_error"] > refits_only["std_error"] * 1.02
    assert row["ci_low"] <= median <= row["ci_high"]


def test_only_the_move_beyond_its_own_noise_widens_a_percentiles_se() -> None:
    # The refits' moves are noise alone (drawn from the smoothed fit): a move like theirs is
    # no bias; the old bound, hypot(SE, move), counted it anyway (SE/SD 1.23-1.31, issue 39).
    null = np.random.default_rng(3).normal(0.2, 0.5, 40)
    null = 0.2 + (null - null.mean()) / null.std(ddof=1) * 0.5  # mean 0.2, SD 0.5 exactly
    assert smoothing_error(1.0, 0.6, null) == 1.0  # 0.4 from their mean, within their SD
    assert smoothing_error(1.0, 3.2, null) == pytest.approx(np.sqrt(1.0 + 3.0**2 - 0.5**2))
    assert smoothing_error(1.0, 0.6, null[:1]) == pytest.approx(np.hypot(1.0, 0.6))  # no spread


def test_the_search_tries_a_richer_shape_before_it_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 39: every λ from the stiffest to about 10^3 fits the same quadratic log-density,
    # and two steps along that plateau stopped the search: a lognormal's p95 (ε = 1, 128
    # buckets, 10,000 devices) came out 3.8 low with an SE of about 2.
    sw = SquareWave(epsilon=1.0, lo=0.0, hi=100.0, buckets=128, scale="linear")
    rng = np.random.default_rng(18)
    sums = sw.new_sums()
    sums.add_many(sw.privatize_many(np.exp(rng.normal(np.log(20.0), 0.5, 10_000)), rng))
    counts = np.asarray(sums.table[0], dtype=float)
    truth = 20.0 * np.exp(0.5 * 1.6448536)  # the lognormal's own p95

    def p95() -> float:
        return percentile(pspline.select(sw.channel, counts)[0], 0.95) * 100

    assert abs(p95() - truth) < 1.5
    monkeypatch.setattr(pspline, "FREEDOM", float("-inf"))  # stop after PATIENCE λ, as before
    assert p95() < truth - 3.0
    assert pspline.searched([5.0, 5.0, 5.0], [4.0, 4.0, 4.1])
    monkeypatch.undo()
    assert not pspline.searched([5.0, 5.0, 5.0], [4.0, 4.0, 4.1])  # the plateau: go on
    assert pspline.searched([5.0, 5.0, 5.0], [4.0, 4.4, 5.0])
