"""The baseline runners import the real pure-ldp, not this project's module of that name."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from benchmarks.baselines.pure_ldp import HERE, RUNNER, runner_command


def test_runner_folder_does_not_shadow_pure_ldp(tmp_path: Path) -> None:
    # This venv has no pure-ldp, so the runner must fail to find the package at all; run
    # without -I it found benchmarks/baselines/pure_ldp.py instead ("not a package") and
    # every baseline row of `make bench` was silently missing.
    spec = tmp_path / "in.json"  # the heavy-hitters runner reads its spec before importing
    spec.write_text("{}", encoding="utf-8")
    for runner in (RUNNER, HERE / "heavy_hitters_runner.py"):
        done = subprocess.run(
            runner_command(Path(sys.executable), runner, str(spec), str(tmp_path / "out.json")),
            input="",
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode != 0
        assert "No module named 'pure_ldp'" in done.stderr, done.stderr
        assert "is not a package" not in done.stderr
