"""The numeric coverage experiment, small and seeded: intervals cover or say they cannot."""

from __future__ import annotations

import numpy as np

from simulations.numeric import coverage as nc

SMALL = nc.Setting("linear ε=1, 32 buckets, small", 1.0, 0.0, 100.0, "linear", 32, 4_000)


def test_smooth_statistics_cover_and_their_errors_match_the_spread() -> None:
    # 48 populations: one SE of the coverage is 3 %, of SE/SD about 10 % (with 24 the
    # median's SE/SD came out 1.55 where 80 populations give 1.13)
    rows = {r["statistic"]: r for r in nc.cell(SMALL, nc.uniform, 48, np.random.default_rng(1))}
    for name in ("mean", "p50", "first_bucket", "last_bucket"):
        row = rows[name]
        assert row["coverage"] >= 0.85, row
        assert abs(row["mean_z"]) < 0.5 and 0.7 < row["se_over_sd"] < 1.4, row
        assert row["unreliable"] <= 0.2, row  # a bumpy fit can look biased


def test_a_point_mass_tail_says_it_cannot_be_trusted() -> None:
    rows = {r["statistic"]: r for r in nc.cell(SMALL, nc.point_mass, 10, np.random.default_rng(2))}
    assert rows["p99"]["unreliable"] == 1.0  # a spike: flagged, not covered
    assert rows["first_bucket"]["unreliable"] == 0.0


def test_truth_and_table_name_every_statistic() -> None:
    mechanism = SMALL.mechanism()
    values = np.array([-5.0, 0.5, 50.0, 99.9, 200.0])
    real = nc.truth(values, nc.STATISTICS, mechanism)
    assert real["first_bucket"] == 0.4 and real["last_bucket"] == 0.4
    assert real["mean"] == np.clip(values, 0, 100).mean()
    row = nc.summary("p50", [(1.0, nc.Row(1.1, 0.1, 0.9, 1.3, True))] * 2)
    assert row["coverage"] == 1.0 and row["unreliable"] == 0.0
    assert "| p50 |" in nc.table([{"setting": "s", "population": "p", **row}], 2).markdown()
