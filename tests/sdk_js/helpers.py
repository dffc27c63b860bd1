"""Helpers of the TypeScript SDK's tests: its folder, its build, and node.

node and sdk-js/node_modules come from ``make test`` (Debian's nodejs and ``npm ci`` from
the lock file); without them these tests fail and say so. Tasks and estimates go through
tests/support/reports.py, the collector through tests/support/servers.py.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

SDK = Path(__file__).resolve().parents[2] / "sdk-js"
NODE_TIMEOUT = 240


def build() -> None:
    """Compile the SDK and its tests (tsc, strict) and bundle it (esbuild), or fail saying why."""
    if shutil.which("node") is None or not (SDK / "node_modules").is_dir():
        raise AssertionError(
            "the TypeScript SDK's tests need node and sdk-js/node_modules: run 'make test' "
            "(it installs Debian's nodejs and runs npm ci from sdk-js/package-lock.json)"
        )
    run(["npm", "run", "--silent", "build"])


def run(command: list[str], cwd: Path = SDK, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """Run a command in sdk-js/ (or ``cwd``) and fail with its output unless it succeeds."""
    done = subprocess.run(
        command,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=NODE_TIMEOUT,
        check=False,
        **kwargs,
    )
    assert done.returncode == 0, (
        f"{' '.join(command)} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    )
    return done


def node(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run a compiled script of sdk-js/build/ with node."""
    return run(["node", str(SDK / "build" / script), *args])
