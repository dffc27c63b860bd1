"""python -m simulations: help lists every experiment; a quick run writes its files."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from simulations.__main__ import EXPERIMENTS, main


def test_help_describes_every_experiment(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for name in [*EXPERIMENTS, "--seed", "--out", "--quick"]:
        assert name in text


def test_unknown_experiment_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["nope"])
    assert exit_info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_quick_run_writes_plot_and_tables_and_the_same_seed_the_same_numbers(
    tmp_path: Path,
) -> None:
    for out in ("a", "b"):
        argv = ["rr_seed", "--quick", "--seed", "9", "--out", str(tmp_path / out), "--no-progress"]
        assert main(argv) == 0
    folder = tmp_path / "a" / "rr_seed"
    assert sorted(p.name for p in folder.iterdir()) == ["rr_seed.csv", "rr_seed.md", "rr_seed.png"]
    with (folder / "rr_seed.csv").open() as handle:
        rows = {row["quantity"]: float(row["value"]) for row in csv.DictReader(handle)}
    assert rows["estimate π̂ from 400 yes of 1000"] == pytest.approx(0.3)
    first, second = (tmp_path / out / "rr_seed" / "rr_seed.csv" for out in "ab")
    assert first.read_text() == second.read_text()


def test_unwritable_output_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert main(["rr_seed", "--quick", "--out", str(blocker), "--no-progress"]) == 1
    assert "cannot write" in capsys.readouterr().err
