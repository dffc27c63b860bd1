"""domain_kinds: simulated variances beside the closed forms, the map, and SS's gain."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from simulations.frequency import domain_kinds
from simulations.frequency.domain_kinds import QUICK, Sizes


def test_simulated_variances_match_the_closed_forms() -> None:
    sizes = Sizes(
        (2.0,), (24,), n=2_000, samples=600, hashing_reps=25, map_epsilons=2, map_domains=2
    )
    cells = domain_kinds.compute(sizes, np.random.default_rng(3))
    assert sorted(c.mechanism for c in cells) == sorted(domain_kinds.AUTO_KINDS)
    for cell in cells:
        # 600 squared errors: the variance estimate's relative SD is about sqrt(2/600) = 6%.
        assert cell.simulated / cell.theory == pytest.approx(1.0, abs=0.25), cell
    gain = domain_kinds.gains_table(cells).rows[0]
    assert gain["rare"] == pytest.approx(0.185, abs=0.005)  # docs/design.md: 19% at (2, 24)
    assert gain["simulated"] == pytest.approx(gain["theory"], abs=0.12)


@pytest.mark.parametrize(("epsilon", "d", "expected"), [(1.0, 10, 0.22), (4.0, 166, 0.17)])
def test_rare_value_gains_are_design_s(epsilon: float, d: int, expected: float) -> None:
    assert domain_kinds.rare_value_gain(epsilon, d) == pytest.approx(expected, abs=0.005)


def test_the_crossover_map_follows_the_closed_forms() -> None:
    grid = domain_kinds.crossover_map(QUICK)
    best = grid.best_other
    assert len(best) == len(grid.epsilons) and all(len(r) == len(grid.domains) for r in best)
    # grr for small domains at large ε, oue for large domains at small ε (d = 3e^ε + 2).
    assert best[-1][0] == "grr" and best[0][-1] == "oue"
    assert grid.ss_gain.min() > -0.01  # ss is never worse (it is grr when ω = 1)


def test_quick_run_writes_its_files(tmp_path: Path) -> None:
    written = domain_kinds.run(
        domain_kinds.RunSettings(out_dir=tmp_path, quick=True, show_progress=False)
    )
    assert sorted(p.name for p in written) == sorted(
        [
            "domain_kinds.png",
            "domain_kinds.csv",
            "domain_kinds.md",
            "domain_kinds_gain.csv",
            "domain_kinds_gain.md",
        ]
    )
