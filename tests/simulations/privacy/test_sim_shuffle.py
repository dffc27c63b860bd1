"""shuffle: the accountant's bound sits above the exact floor of shuffled RR and falls in n."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulations.common.settings import RunSettings
from simulations.privacy import shuffle

SMALL = shuffle.Sizes(epsilons=(1.0, 4.0), sizes=(300, 3_000))


@pytest.fixture(scope="module")
def rows() -> list[shuffle.Row]:
    return shuffle.compute(SMALL)


def test_bound_covers_the_exact_rr_floor(rows: list[shuffle.Row]) -> None:
    for row in rows:
        assert 0 < row.floor <= row.bound <= row.epsilon0


def test_bounds_fall_with_n(rows: list[shuffle.Row]) -> None:
    for epsilon0 in SMALL.epsilons:
        few, many = (r for r in rows if r.epsilon0 == epsilon0)
        assert many.bound < few.bound and many.floor < few.floor
        assert set(many.kinds) == set(few.kinds) and many.kinds
        for name, value in many.kinds.items():
            assert value < few.kinds[name]


def test_floor_of_one_report_is_epsilon0() -> None:
    # A batch of one is not shuffled at all: the exact ε is the local one.
    assert shuffle.rr_floor(2.0, 1, 1e-8) == pytest.approx(2.0, rel=1e-5)


def test_run_writes_plot_and_tables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The files and the table, not the numbers (the tests above check those): the quick
    # run's path on a smaller grid.
    monkeypatch.setattr(shuffle, "QUICK", shuffle.Sizes(epsilons=(1.0,), sizes=(1_000, 10_000)))
    paths = shuffle.run(RunSettings(out_dir=tmp_path, quick=True, show_progress=False))
    assert sorted(p.name for p in paths) == ["shuffle.csv", "shuffle.md", "shuffle.png"]
    assert "stronger clone" in capsys.readouterr().out
