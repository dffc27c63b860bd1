"""numeric_rows --store-counts / --from-counts: the same draws answered again, the same table."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from simulations.coverage import experiment as coverage
from simulations.coverage import numeric_rows, stored

SIZES = coverage.Sizes(devices=400, reps=6, costly_reps=2)


def same(a: list[dict], b: list[dict]) -> bool:
    """Return whether two tables' rows are equal (nan equal to nan)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x.keys() != y.keys():
            return False
        for key in x:
            u, v = x[key], y[key]
            if isinstance(u, float) and math.isnan(u) and isinstance(v, float) and math.isnan(v):
                continue
            if u != v:
                return False
    return True


def test_stored_runs_answer_as_the_run_that_drew_them(tmp_path: Path) -> None:
    # 1bit ε=1 (cheap) and one Square Wave population at ε=1 over 64 buckets.
    direct = numeric_rows.rows(11, [2], SIZES, store=tmp_path)
    direct += numeric_rows.rows(11, [0], SIZES, ["uniform"], store=tmp_path)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["11-0-0.npz", *(f"11-2-{i}.npz" for i in range(5))]
    again, devices = numeric_rows.from_counts(tmp_path, 11, [2, 0])
    assert devices == SIZES.devices
    assert same(direct, again)
    assert len({row["population"] for row in again}) == 5
    uniform, _ = numeric_rows.from_counts(tmp_path, 11, [2], ["uniform"])
    setting = uniform[0]["setting"]
    chosen = [r for r in direct if r["population"] == "uniform" and r["setting"] == setting]
    assert same(chosen, uniform)
    # Drawing only stores the same counts, in seconds.
    only = tmp_path / "only"
    assert numeric_rows.rows(11, [0], SIZES, ["uniform"], store=only, answer=False) == []
    for name in ("n", "table", "seeds"):
        with np.load(only / "11-0-0.npz") as a, np.load(tmp_path / "11-0-0.npz") as b:
            assert np.array_equal(a[name], b[name])
    case, drawn = stored.load(only / "11-0-0.npz")
    assert case.costly and len(drawn) == SIZES.costly_reps
    assert all(run.sums.total == SIZES.devices for run in drawn)
    assert np.all(np.isfinite(case.truth(["p50", "mean"])))
