"""sketch_accuracy: CMS/HCMS SDs match the closed forms over n, ε, m and k; small k shows
the collision bias on Zipf data, and its RMSE matches the hash-averaged total."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from simulations.frequency import sketch_accuracy
from simulations.frequency.sketch_accuracy import Point

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def points() -> list[Point]:
    return sketch_accuracy.compute(sketch_accuracy.QUICK, np.random.default_rng(8))


def _point(points: list[Point], sweep: str, mechanism: str, **where: float) -> Point:
    return next(
        p
        for p in points
        if p.sweep == sweep
        and p.mechanism == mechanism
        and all(getattr(p, key) == value for key, value in where.items())
    )


def test_every_sweep_is_measured(points: list[Point]) -> None:
    sizes = sketch_accuracy.QUICK
    expected = len(sizes.ns) + len(sizes.epsilons) + len(sizes.ms) + len(sizes.ks)
    assert len(points) == 2 * expected


def test_noise_sd_matches_the_closed_form(points: list[Point]) -> None:
    for point in points:
        assert point.sd == pytest.approx(point.sd_theory, rel=0.1), point


def test_design_reference_values(points: list[Point]) -> None:
    # docs/design.md, reference standard deviations: rare item at ε = 4, m = 1024,
    # n = 10^5: CMS 135, HCMS 328.
    assert _point(points, "n", "cms", n=100_000).sd_theory == pytest.approx(135, rel=0.01)
    assert _point(points, "n", "hcms", n=100_000).sd_theory == pytest.approx(328, rel=0.01)


def test_rmse_matches_the_total_with_collisions(points: list[Point]) -> None:
    for point in points:
        tolerance = 0.3 if point.sweep == "k" else 0.12  # few hash families: heavy tails
        assert point.rmse == pytest.approx(point.rmse_theory, rel=tolerance), point


@pytest.mark.parametrize("mechanism", ["cms", "hcms"])
def test_collision_bias_shrinks_with_k(points: list[Point], mechanism: str) -> None:
    ks = sketch_accuracy.QUICK.ks
    few, many = (_point(points, "k", mechanism, k=k) for k in (ks[0], ks[-1]))
    assert few.rmse > 3 * few.sd  # the collision bias dominates the noise at k = 1...
    assert few.coverage > 0.9  # ...and the reported standard error accounts for it
    assert many.rmse < 1.15 * many.sd and many.coverage > 0.9


def test_outputs(points: list[Point], tmp_path: Path) -> None:
    assert sketch_accuracy.plot(points, tmp_path / "k.png").stat().st_size > 20_000
    table = sketch_accuracy.table(points)
    assert table.column("sd") == [p.sd for p in points]
