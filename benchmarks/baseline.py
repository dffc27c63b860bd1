"""Install the pure-ldp baseline into its own virtualenv and run its measurements.

pure-ldp needs numpy < 2 (this project runs on numpy 2), so it lives in a separate
virtualenv, by default ``bench-results/.baseline-venv`` (git-ignored), created on first use
from ``benchmarks/baseline-requirements.txt`` and reused while its requirements file is
unchanged. ``baseline_runner.py`` runs there and answers JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "baseline-requirements.txt"
RUNNER = HERE / "baseline_runner.py"
INSTALL_TIMEOUT = 900  # seconds: building the venv downloads ~150 MB of wheels
RUN_TIMEOUT = 3600
# One BLAS/OpenMP thread: every number in the table is per core.
SINGLE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                        "MKL_NUM_THREADS")}


class BaselineUnavailable(RuntimeError):
    """The baseline could not be installed or run; the message says why."""


def baseline_python(venv: Path) -> Path:
    """Return the baseline venv's python, creating or refreshing the venv when needed."""
    venv = venv.resolve()
    python = venv / "bin" / "python"
    stamp = venv / ".requirements"
    wanted = REQUIREMENTS.read_text(encoding="utf-8")
    if python.exists() and stamp.exists() and stamp.read_text(encoding="utf-8") == wanted:
        return python
    print(f"benchmarks: installing the pure-ldp baseline into {venv} ...", file=sys.stderr)
    _run([sys.executable, "-m", "venv", "--clear", str(venv)], "create the virtualenv")
    _run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
          "-r", str(REQUIREMENTS)], "install benchmarks/baseline-requirements.txt")
    _run([str(python), "-c", "import pure_ldp.frequency_oracles.apple_cms"],
         "import pure_ldp")
    stamp.write_text(wanted, encoding="utf-8")
    return python


def run_baseline(python: Path, spec: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Run the baseline runner on ``spec`` and return its JSON answer."""
    spec_file = folder / "baseline_spec.json"
    spec_file.write_text(json.dumps(spec), encoding="utf-8")
    try:
        done = subprocess.run([str(python), str(RUNNER), str(spec_file)], capture_output=True,
                              text=True, timeout=RUN_TIMEOUT, check=False, cwd=folder,
                              env={**os.environ, **SINGLE_THREAD})
    except subprocess.TimeoutExpired as error:
        raise BaselineUnavailable(f"the baseline run took over {RUN_TIMEOUT} s") from error
    if done.returncode != 0:
        raise BaselineUnavailable(f"the baseline runner failed: {_tail(done.stderr)}")
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError as error:
        raise BaselineUnavailable(f"the baseline runner printed no JSON: {error}") from error


def _run(command: list[str], what: str) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True,
                              timeout=INSTALL_TIMEOUT, check=False)
    except subprocess.TimeoutExpired as error:
        raise BaselineUnavailable(f"could not {what}: timed out") from error
    if done.returncode != 0:
        raise BaselineUnavailable(f"could not {what}: {_tail(done.stderr or done.stdout)}")


def _tail(text: str, lines: int = 3) -> str:
    return " | ".join(text.strip().splitlines()[-lines:]) or "no output"
