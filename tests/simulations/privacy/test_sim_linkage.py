"""The linkage experiment: seeded; memoization shows changes; rows link by how few share them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from simulations.common.settings import RunSettings
from simulations.privacy import linkage


def test_change_shows_under_memoization_and_rows_link_as_their_crowds_say() -> None:
    sizes = linkage.Sizes(devices=300, accuracy_devices=4_000, repeats=1)
    rows = {row["variant"]: row for row in linkage.compute(sizes, np.random.default_rng(8))}
    again = linkage.compute(sizes, np.random.default_rng(8))
    assert [row["linking"] for row in again] == [row["linking"] for row in rows.values()]
    assert rows["rappor"]["change"] > 0.9  # a new value, a new permanent response
    assert abs(rows["plain"]["change"] - 0.5) < 0.1  # fresh noise at ε₁ over 100 values
    assert rows["plain"]["linking"] < 5 / sizes.devices
    few, many = rows["bilolha, 16 seeds"], rows["bilolha, 65,536 seeds"]
    assert many["linking"] > 0.5 > few["linking"]  # near-private seeds identify the device
    assert 0.55 < few["change"] < 0.9  # only a change of bucket and response shows
    assert few["lifetime"] == many["lifetime"] < rows["rappor"]["lifetime"]
    # 16 rows cannot tell 100 values apart: OLH's biased estimator; the defaults solve exactly
    assert few["estimator"] == rows["ololoha, 16 seeds"]["estimator"] == "olh"
    for default in ("bilolha, 149 seeds (default)", "ololoha, 50 seeds (default)"):
        assert rows[default]["estimator"] == "exact"
        assert rows[default]["error"] <= 1.5 * rows["rappor"]["error"]


def test_the_run_writes_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The files, not the numbers (the test above checks those, at these sizes): the quick
    # run's path, smaller.
    monkeypatch.setattr(
        linkage, "QUICK", linkage.Sizes(devices=300, accuracy_devices=4_000, repeats=1)
    )
    settings = RunSettings(seed=4, out_dir=tmp_path, quick=True, show_progress=False)
    files = linkage.run(settings)
    assert [f.name for f in files] == ["linkage.csv", "linkage.md"]
    assert "| rappor |" in (tmp_path / "linkage" / "linkage.md").read_text()
