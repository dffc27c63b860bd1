"""The numeric experiment: seeded, the methods' errors ordered as the theory says."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from simulations.common.settings import RunSettings
from simulations.numeric import accuracy as numeric


def test_the_one_bit_and_piecewise_means_match_their_closed_forms() -> None:
    rng = np.random.default_rng(3)
    values = numeric.latencies(20_000, rng)
    for mean_of in (numeric.one_bit, numeric.piecewise):
        z = []
        for _ in range(30):
            mean, error = mean_of(values, 2.0, rng)
            z.append((mean - np.clip(values, *numeric.LINEAR_RANGE).mean()) / error)
        # 1bit's buckets move each value by under half a bucket (5 s / 2048): no visible bias
        assert abs(np.mean(z)) < 0.6 and 0.6 < np.std(z) < 1.4, mean_of.__name__


def test_quick_run_is_seeded_and_square_wave_beats_grr_on_the_tail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = RunSettings(seed=4, out_dir=tmp_path, quick=True, show_progress=False)
    computed: list[list[dict[str, object]]] = []  # what the run computed (two runs, not three)

    def compute(*args: Any) -> list[dict[str, object]]:
        computed.append(real_compute(*args))
        return computed[-1]

    real_compute = numeric.compute
    monkeypatch.setattr(numeric, "compute", compute)
    files = numeric.run(settings)
    first = computed[0]
    assert computed == [real_compute(numeric.QUICK, settings.rng(), False)]  # seeded
    cell = {(r["method"], r["epsilon"]): r for r in first}
    for epsilon in numeric.EPSILONS:
        assert cell[("sw", epsilon)]["p99"] < cell[("grr", epsilon)]["p99"]
    assert cell[("sw", 4.0)]["p50"] < 0.03
    assert all(math.isfinite(float(r["mean"])) for r in first)
    assert [f.name for f in files] == ["numeric.png", "numeric.csv", "numeric.md"]
    assert "| sw | 2 |" in (tmp_path / "numeric" / "numeric.md").read_text()
