"""heavy_hitters: the quick sweep runs seeded, finds the frequent strings, and its files
are written; the exact level sampler matches privatize_many + add_many in distribution."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from simulations.common.settings import RunSettings
from simulations.frequency import heavy_hitters

pytestmark = [pytest.mark.timeout(180)]


def test_quick_sweep_is_seeded_and_finds_the_top_strings() -> None:
    sizes = heavy_hitters.QUICK
    first = heavy_hitters.compute(sizes, np.random.default_rng(4))
    again = heavy_hitters.compute(sizes, np.random.default_rng(4))
    strip = [{k: v for k, v in vars(p).items() if k != "query_seconds"} for p in first]
    assert strip == [{k: v for k, v in vars(p).items() if k != "query_seconds"} for p in again]
    assert len(first) == len(heavy_hitters.configurations(sizes))
    for point in first:
        assert 0.5 <= point.top10 <= point.ceiling10 + 0.2  # found without a dictionary
        assert point.ceiling20 >= 0.5
        assert point.reliable_rows >= 1 and point.reliable_precision >= 0.9
        assert point.reliable_spurious <= 0.1  # flagged rows are strings devices hold


def test_sampled_level_sums_match_privatized_reports() -> None:
    """Mean level counts of the exact sampler and of real reports agree (same task)."""
    hh = heavy_hitters.HeavyHitters(
        epsilon=2.0, k=4, m=8, hash_seed=1, alphabet="abc", max_length=4
    )
    values, counts = ["ab", "abca", "c"], np.array([300, 200, 100])
    population = [v for v, c in zip(values, counts, strict=True) for _ in range(c)]
    rng = np.random.default_rng(9)
    sampled = [heavy_hitters.sample_hh_sums(hh, values, counts, rng) for _ in range(200)]
    real = []
    for _ in range(200):
        sums = hh.new_sums()
        sums.add_many(hh.privatize_many(population, rng))
        real.append(sums)
    for attribute in ("n", "table"):
        a = np.mean([getattr(s, attribute) for s in sampled], axis=0)
        b = np.mean([getattr(s, attribute) for s in real], axis=0)
        spread = np.std([getattr(s, attribute) for s in real], axis=0) / np.sqrt(200)
        assert np.all(np.abs(a - b) <= 5 * spread + 1e-9)


def test_run_writes_plot_and_tables(tmp_path: Path) -> None:
    written = heavy_hitters.run(
        RunSettings(seed=3, out_dir=tmp_path, quick=True, show_progress=False)
    )
    assert [p.suffix for p in written] == [".png", ".csv", ".md"]
    assert all(p.stat().st_size > 0 for p in written)
    assert "dict. top-20" in written[2].read_text()
