"""The longitudinal experiment: seeded, the attacker capped by ε∞, variances as the theory."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from simulations.common.settings import RunSettings
from simulations.privacy import longitudinal


def test_the_attacker_is_capped_with_the_option_and_not_without() -> None:
    posteriors = longitudinal.attack(600, np.random.default_rng(5))
    epsilon_inf = longitudinal.ATTACK[0]
    bound = math.exp(epsilon_inf) / (1 + math.exp(epsilon_inf))
    assert posteriors["without"][-1] > 0.99  # 1,000 fresh reports give the value away
    assert np.all(posteriors["with"] <= bound + 0.02)  # never past the permanent layer's
    assert posteriors["with"][-1] < 0.7
    assert np.all(np.diff(posteriors["without"]) > -0.02)  # more reports, more confidence


def test_quick_run_is_seeded_and_matches_the_closed_form(tmp_path: Path) -> None:
    settings = RunSettings(seed=4, out_dir=tmp_path, quick=True, show_progress=False)
    sizes = longitudinal.Sizes(devices=100, populations=60, population=4_000)
    rows = longitudinal.accuracy(sizes, settings.rng(), False)
    tiny = longitudinal.Sizes(devices=100, populations=4, population=500)  # the same code, seeded
    assert longitudinal.accuracy(tiny, settings.rng(), False) == longitudinal.accuracy(
        tiny, settings.rng(), False
    )
    for row in rows:
        assert row["epsilon_1"] < row["epsilon_inf"] <= 4.0
        # 60 populations: the SD of a sample SD is ~9%; 0.7-1.3 is beyond 3 of them
        assert 0.7 < row["sd_over_se"] < 1.3, row
        assert row["ratio_theory"] > 1.0
    files = longitudinal.run(settings)
    assert [f.name for f in files] == ["longitudinal.png", "longitudinal.csv", "longitudinal.md"]
    assert "| cms |" in (tmp_path / "longitudinal" / "longitudinal.md").read_text()
