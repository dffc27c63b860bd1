"""The penalized log-spline (P-spline) reconstruction of Square Wave reports."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ldp_telemetry.shared.mechanisms.numeric import estimate as est
from ldp_telemetry.shared.mechanisms.numeric import pspline, refits, spline
from ldp_telemetry.shared.mechanisms.numeric.mechanism import SquareWave
from ldp_telemetry.shared.mechanisms.numeric.shape import percentile


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
    assert row["std_error"] == pytest.approx(np.hypot(refits_only["std_error"], smoothed - rough))
    assert row["ci_low"] <= median <= row["ci_high"]
