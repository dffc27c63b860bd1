"""Install the pure-ldp baseline into its own virtualenv and run its measurements.

pure-ldp needs numpy < 2 (this project runs on numpy 2), so it lives in a separate
virtualenv, by default ``bench-results/.baseline-venv`` (git-ignored), created on first use
from ``benchmarks/baselines/pure-ldp-requirements.txt`` and reused while its requirements file is
unchanged. ``pure_ldp_runner.py`` runs there as a ``BaselineSession`` and answers JSON.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "pure-ldp-requirements.txt"
RUNNER = HERE / "pure_ldp_runner.py"
INSTALL_TIMEOUT = 900  # seconds: building the venv downloads ~150 MB of wheels
RUN_TIMEOUT = 3600
# One BLAS/OpenMP thread: every number in the table is per core.
SINGLE_THREAD = {
    name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
}


def runner_command(python: Path, runner: Path, *args: str) -> list[str]:
    """Return the command that runs a baseline ``runner`` script in the baseline venv.

    Isolated (``-I``): a script's own folder comes first on ``sys.path``, and this folder
    holds ``pure_ldp.py`` (this module), which would shadow the pure-ldp package.
    """
    return [str(python), "-I", str(runner), *args]


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
    _run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
            str(REQUIREMENTS),
        ],
        "install benchmarks/baselines/pure-ldp-requirements.txt",
    )
    _run([str(python), "-c", "import pure_ldp.frequency_oracles.apple_cms"], "import pure_ldp")
    stamp.write_text(wanted, encoding="utf-8")
    return python


class BaselineSession:
    """A running baseline runner answering one spec at a time (see pure_ldp_runner.py)."""

    def __init__(self, python: Path, folder: Path) -> None:
        self._process = subprocess.Popen(
            runner_command(python, RUNNER),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=folder,
            env={**os.environ, **SINGLE_THREAD},
        )
        self.version = "?"  # pure-ldp's version, from the first answer

    def ask(self, spec: dict[str, Any], timeout: float = RUN_TIMEOUT) -> dict[str, Any]:
        """Send a spec and return the runner's answer (BaselineUnavailable on failure)."""
        assert self._process.stdin and self._process.stdout
        try:
            self._process.stdin.write(json.dumps(spec) + "\n")
            self._process.stdin.flush()
        except BrokenPipeError as error:
            raise BaselineUnavailable(f"the baseline runner exited: {self._stderr()}") from error
        ready, _, _ = select.select([self._process.stdout], [], [], timeout)
        line = self._process.stdout.readline() if ready else ""
        if not line:
            raise BaselineUnavailable(
                f"the baseline runner gave no answer within {timeout:.0f} s: {self._stderr()}"
            )
        answer: dict[str, Any] = json.loads(line)
        self.version = str(answer.get("version", self.version))
        return answer

    def close(self) -> None:
        """Stop the runner (end of input, then a bounded wait, then kill)."""
        if self._process.stdin:
            # A runner that already exited was reported by ask(); closing must not mask that.
            with contextlib.suppress(BrokenPipeError):
                self._process.stdin.close()
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(timeout=30)

    def _stderr(self) -> str:
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait(timeout=30)
        return _tail(self._process.stderr.read() if self._process.stderr else "")


def _run(command: list[str], what: str) -> None:
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired as error:
        raise BaselineUnavailable(f"could not {what}: timed out") from error
    if done.returncode != 0:
        raise BaselineUnavailable(f"could not {what}: {_tail(done.stderr or done.stdout)}")


def _tail(text: str, lines: int = 3) -> str:
    return " | ".join(text.strip().splitlines()[-lines:]) or "no output"
