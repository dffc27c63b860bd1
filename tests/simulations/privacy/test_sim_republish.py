"""The re-publishing collector, seeded and small: the ledger keeps the attacker within ε∞."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from simulations.common.settings import RunSettings
from simulations.privacy import republish


def rows_by(rows: list[dict], scenario: str) -> dict[str, dict]:
    return {row["setting"]: row for row in rows if row["scenario"] == scenario}


def test_the_ledger_keeps_every_posterior_within_its_bound() -> None:
    # 100 devices: the mean posterior of 40 sat within 0.04 of the bound's margin.
    rows = republish.simulate(100, np.random.default_rng(11))
    # seeded: the same code on 5 devices (a second run of 100 doubled the test's time)
    assert republish.simulate(5, np.random.default_rng(11)) == republish.simulate(
        5, np.random.default_rng(11)
    )
    same = rows_by(rows, "same task id, flip changed daily")
    new = rows_by(rows, "new task id daily")
    default = same["ledger, SDK defaults"]
    assert default["prrs"] == 1.0 and default["sent"] == 1.0  # no second PRR, ever
    assert default["posterior_bound"] < 0.75  # e / (1 + e): ε∞ = 1
    for row in (default, same["ledger, app caps 2 / 3"], new["ledger, app caps 2 / 3"]):
        assert row["prrs"] <= 3.0
        # A bound on every report sequence, so on every device, every day (not only on average).
        assert max(row["max"]) <= row["posterior_bound"] + 1e-12, row["setting"]
    for row in (same["no ledger"], new["no ledger"], new["ledger, SDK defaults"]):
        # Thirty independent PRRs: the attacker passes the one-PRR bound, on average.
        assert row["prrs"] == 30.0
        assert row["mean"][-1] > default["posterior_bound"] + 0.05, row["setting"]
        assert row["mean"][-1] > row["mean"][0] + 0.2


def test_quick_run_writes_its_files(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(republish, "QUICK", 10)
    settings = RunSettings(seed=3, out_dir=tmp_path, quick=True, show_progress=False)
    files = republish.run(settings)
    assert [f.name for f in files] == ["republish.png", "republish.csv", "republish.md"]
    assert (
        "| same task id, flip changed daily | ledger, SDK defaults | 1.0 |"
        in (tmp_path / "republish" / "republish.md").read_text()
    )
