"""Estimates: normal-approximation intervals, proportions and JSON rows
(ldp_telemetry.shared.estimates)."""

from __future__ import annotations

import json
from statistics import NormalDist

import numpy as np
import pytest

from ldp_telemetry.shared import Estimates
from ldp_telemetry.shared.estimates import z_value


@pytest.mark.parametrize("level", [0.5, 0.8, 0.9, 0.95, 0.99, 0.999])
def test_z_value_is_the_two_sided_normal_quantile(level: float) -> None:
    z = z_value(level)
    assert NormalDist().cdf(z) - NormalDist().cdf(-z) == pytest.approx(level, abs=1e-12)


def test_from_variance_builds_symmetric_intervals() -> None:
    estimates = Estimates.from_variance(
        ["a", "b", "c"], np.array([10.0, -2.0, 0.0]), np.array([4.0, 9.0, -1e-12]), n=50
    )
    assert estimates.std_error.tolist() == [2.0, 3.0, 0.0]  # tiny negative rounding -> 0
    half = estimates.ci_high - estimates.estimate
    assert np.allclose(half, z_value(0.95) * np.array([2, 3, 0]))
    assert np.allclose(estimates.estimate - estimates.ci_low, half)
    assert estimates.estimate[1] == -2.0, "estimates are not clipped: clipping would bias them"


def test_proportions_divide_by_n_and_survive_n_zero() -> None:
    estimates = Estimates.from_variance([True], np.array([30.0]), np.array([25.0]), n=100)
    shares = estimates.proportions()
    assert shares.estimate[0] == 0.3 and shares.std_error[0] == 0.05 and shares.n == 100
    empty = Estimates.from_variance([True], np.array([0.0]), np.array([0.0]), n=0)
    assert empty.proportions().estimate.tolist() == [0.0]


def test_rows_are_json_ready() -> None:
    estimates = Estimates.from_variance(
        [True, "x"], np.array([1.5, 2.0]), np.array([1.0, 1.0]), n=3, level=0.9
    )
    rows = json.loads(json.dumps(estimates.rows()))
    assert rows[0] == {
        "value": True,
        "estimate": 1.5,
        "std_error": 1.0,
        "ci_low": pytest.approx(1.5 - z_value(0.9)),
        "ci_high": pytest.approx(1.5 + z_value(0.9)),
    }
    assert rows[1]["value"] == "x"
