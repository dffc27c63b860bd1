"""The lifetime experiment: seeded; LOLOHA's lifetime ε bounded by g·ε∞, nobody silenced."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from simulations.common.settings import RunSettings
from simulations.privacy import lifetime


def test_a_quick_year_bounds_loloha_and_silences_rappors_churners(tmp_path: Path) -> None:
    sizes = lifetime.Sizes(devices=600, days=40)
    rows = {row["variant"]: row for row in lifetime.compute(sizes, np.random.default_rng(3), False)}
    again = lifetime.compute(sizes, np.random.default_rng(3), False)
    assert [row["error"] for row in again] == [rows[v]["error"] for v in lifetime.VARIANTS]
    for variant in ("bilolha", "ololoha", "loloha g=3"):
        row = rows[variant]
        assert row["max"] <= row["g"] * lifetime.EPSILON_INF
        assert row["silenced"] == 0.0 and row["refused"] == 0.0
        assert row["error"] <= 1.5 * rows["rappor"]["error"]
    assert rows["bilolha"]["p99"] * 10 <= rows["rappor"]["p99"]
    # a silenced device stops spending: uncapped, RAPPOR's churners would spend far more
    assert rows["rappor"]["uncapped_p99"] > rows["rappor"]["p99"]
    for variant in ("bilolha", "ololoha", "loloha g=3", "plain"):
        assert rows[variant]["uncapped_p99"] == rows[variant]["p99"]  # never capped
    assert rows["rappor"]["p99"] == pytest.approx(lifetime.CAP, abs=1e-3)  # churners reach the cap
    assert rows["rappor"]["silenced"] > 0.05  # and fall silent
    assert rows["plain"]["median"] == sizes.days * rows["plain"]["epsilon_1"]


def test_the_run_writes_the_table_and_figure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The files, not the numbers (the test above checks those, at these sizes).
    monkeypatch.setattr(lifetime, "QUICK", lifetime.Sizes(devices=600, days=40))
    settings = RunSettings(seed=4, out_dir=tmp_path, quick=True, show_progress=False)
    files = lifetime.run(settings)
    assert [f.name for f in files] == ["lifetime.png", "lifetime.csv", "lifetime.md"]
    assert "| bilolha | 2 |" in (tmp_path / "lifetime" / "lifetime.md").read_text()
