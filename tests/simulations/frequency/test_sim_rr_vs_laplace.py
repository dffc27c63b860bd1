"""rr_vs_laplace: RR's count error matches its closed form and grows like √n; Laplace's
stays at √2/ε."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from simulations.frequency import rr_vs_laplace


@pytest.fixture(scope="module")
def result() -> rr_vs_laplace.Result:
    return rr_vs_laplace.compute(rr_vs_laplace.QUICK, np.random.default_rng(11))


def test_errors_match_the_closed_forms(result: rr_vs_laplace.Result) -> None:
    assert result.epsilon == math.log(3)
    np.testing.assert_allclose(result.rr_sd, result.rr_theory, rtol=0.1)
    # Laplace noise has kurtosis 6: its sample SD over 1000 draws varies by ~3.5%.
    np.testing.assert_allclose(result.laplace_sd, math.sqrt(2) / math.log(3), rtol=0.15)
    # The seeds' 1000 answers with 300 yes: variance 750, in docs/design.md's reference range 27–32.
    assert result.rr_theory[list(result.ns).index(1000)] == pytest.approx(math.sqrt(750))


def test_rr_grows_like_sqrt_n_and_laplace_is_flat(result: rr_vs_laplace.Result) -> None:
    rr_slope, laplace_slope = result.slopes()
    assert rr_slope == pytest.approx(0.5, abs=0.03)
    assert laplace_slope == pytest.approx(0.0, abs=0.03)


def test_outputs_hold_the_numbers(result: rr_vs_laplace.Result, tmp_path: Path) -> None:
    png = rr_vs_laplace.plot(result, tmp_path / "plot.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = rr_vs_laplace.table(result)
    csv_path, md_path = table.write(tmp_path, "table")
    lines = csv_path.read_text().splitlines()
    assert lines[0] == "n,rr_sd,rr_theory,laplace_sd,laplace_theory"
    assert [float(line.split(",")[1]) for line in lines[1:]] == list(result.rr_sd)
    assert "| 1,000 |" in md_path.read_text()
