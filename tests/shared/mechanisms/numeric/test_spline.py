"""The log-spline reconstruction of Square Wave reports: its basis and its fit."""

from __future__ import annotations

import numpy as np

from ldp_telemetry.shared.mechanisms.numeric import estimate as est
from ldp_telemetry.shared.mechanisms.numeric import spline
from ldp_telemetry.shared.mechanisms.numeric.mechanism import SquareWave


def test_the_splines_sum_to_one_and_the_ends_are_their_own() -> None:
    design = spline.basis(64, 7)
    assert design.shape == (64, 9)
    assert np.allclose(design[:, :7].sum(axis=1), 1.0)  # a constant log-density is in the span
    assert design[0, 7] == 1.0 and design[-1, 8] == 1.0
    assert design[1:, 7].sum() == 0.0 and design[:-1, 8].sum() == 0.0


def test_a_smooth_log_density_is_recovered_from_its_expected_reports() -> None:
    sw = SquareWave(epsilon=2.0, lo=0.0, hi=1.0, buckets=128, scale="linear")
    u = (np.arange(128) + 0.5) / 128
    truth = np.exp(-0.5 * ((u - 0.4) / 0.12) ** 2)  # a Gaussian: a quadratic log-density
    truth /= truth.sum()
    best, others = spline.select(sw.channel, sw.channel.forward(truth) * 1e5)
    assert np.abs(best - truth).sum() < 0.01
    assert len(others) == spline.PATIENCE  # more knots tried, none better


def test_a_move_beyond_the_limits_is_a_reason() -> None:
    assert est.moved(0.1, 0.2, 1.0) is None
    assert "+0.9 standard errors" in str(est.moved(0.9, 0.0, 1.0))
    assert "one more bend" in str(est.moved(0.0, -0.7, 1.0))
    assert est.moved(0.0, 0.0, 0.0) is None
