"""posterior: RR answers move the attacker exactly to the e^ε bounds, never beyond."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from simulations.common.theory import posterior_bounds
from simulations.privacy import posterior


@pytest.fixture(scope="module")
def rows() -> list[posterior.Row]:
    return posterior.compute(posterior.QUICK, np.random.default_rng(5))


def test_bounds_of_the_seeds_example() -> None:
    low, high = posterior_bounds(np.array([0.5]), math.log(3))
    assert low[0] == pytest.approx(0.25) and high[0] == pytest.approx(0.75)


def test_rr_posterior_is_exactly_the_bound(rows: list[posterior.Row]) -> None:
    for row in rows:
        assert row.bound_low < row.prior < row.bound_high
        assert row.exact_yes == pytest.approx(row.bound_high, abs=1e-12)
        assert row.exact_no == pytest.approx(row.bound_low, abs=1e-12)


def test_simulated_posteriors_sit_on_the_bounds(rows: list[posterior.Row]) -> None:
    for row in rows:
        for seen, bound, people in (
            (row.empirical_yes, row.bound_high, row.answered_yes),
            (row.empirical_no, row.bound_low, row.answered_no),
        ):
            assert abs(seen - bound) < 4.5 * math.sqrt(bound * (1 - bound) / people)


def test_outputs(rows: list[posterior.Row], tmp_path: Path) -> None:
    assert posterior.plot(rows, tmp_path / "p.png").stat().st_size > 10_000
    _, md_path = posterior.table(rows).write(tmp_path, "p")
    assert md_path.read_text().count("\n| ") == len(rows) + 1  # header + one line per row
