"""rr_seed: 1000 answers, 400 yes -> 30% with the closed-form interval; simulated spread and
coverage agree with it (and with the sampling variance for a sampled population)."""

from __future__ import annotations

import math
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest

from simulations.frequency import rr_seed


@pytest.fixture(scope="module")
def result() -> rr_seed.Result:
    return rr_seed.compute(rr_seed.QUICK, np.random.default_rng(3))


def test_worked_example(result: rr_seed.Result) -> None:
    se = math.sqrt(750) / 1000  # n·P(1−P)/α² with P(1−P) = 3/16 for both answers, α = 1/2
    half = NormalDist().inv_cdf(0.975) * se
    example = result.example
    assert example.estimate[0] == pytest.approx(0.3, abs=1e-12)
    assert example.std_error[0] == pytest.approx(se, rel=1e-9)
    assert (example.ci_low[0], example.ci_high[0]) == pytest.approx((0.3 - half, 0.3 + half))
    assert result.sampled_se == pytest.approx(math.sqrt(960) / 1000)


def test_simulated_spread_and_coverage(result: rr_seed.Result) -> None:
    assert result.fixed_shares.mean() == pytest.approx(0.3, abs=0.002)
    assert result.fixed_shares.std() == pytest.approx(result.fixed_se, rel=0.07)
    assert result.fixed_coverage == pytest.approx(0.95, abs=0.02)
    assert result.sampled_shares.std() == pytest.approx(result.sampled_se, rel=0.07)
    # The fixed-population interval is too narrow for a sampled population, by 750/960.
    expected = 2 * NormalDist().cdf(NormalDist().inv_cdf(0.975) * math.sqrt(750 / 960)) - 1
    assert result.sampled_coverage == pytest.approx(expected, abs=0.025)


def test_outputs(result: rr_seed.Result, tmp_path: Path) -> None:
    assert rr_seed.plot(result, tmp_path / "s.png").stat().st_size > 10_000
    csv_path, _ = rr_seed.table(result).write(tmp_path, "s")
    assert "estimate π̂ from 400 yes of 1000,0.3" in csv_path.read_text()
