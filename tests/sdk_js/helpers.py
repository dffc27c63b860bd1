"""Helpers of the TypeScript SDK's tests: its folder, its build, node, and a real collector.

A module of its own (not conftest.py), named so no other test folder shadows it. node and
sdk-js/node_modules come from ``make test`` (Debian's nodejs and ``npm ci`` from the lock
file); without them these tests fail and say so.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import requests

HERE = Path(__file__).resolve().parent
SDK = HERE.parents[1] / "sdk-js"

from tests.support.servers import ADMIN, ANALYST, bearer, start_server  # noqa: E402

__all__ = ["ADMIN", "ANALYST", "SDK", "bearer", "build", "create_task", "node", "start_server"]
NODE_TIMEOUT = 240


def build() -> None:
    """Compile the SDK and its tests (tsc, strict) and bundle it (esbuild), or fail saying why."""
    if shutil.which("node") is None or not (SDK / "node_modules").is_dir():
        raise AssertionError(
            "the TypeScript SDK's tests need node and sdk-js/node_modules: run 'make test' "
            "(it installs Debian's nodejs and runs npm ci from sdk-js/package-lock.json)"
        )
    run(["npm", "run", "--silent", "build"])


def run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """Run a command in sdk-js/ and fail with its output unless it succeeds."""
    done = subprocess.run(
        command,
        cwd=SDK,
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


def create_task(url: str, **fields: Any) -> dict[str, Any]:
    """Create a task on the collector (admin token) and return its JSON."""
    response = requests.post(f"{url}/v1/tasks", json=fields, headers=bearer(ADMIN), timeout=30)
    assert response.status_code == 201, response.text
    return json.loads(response.text)  # type: ignore[no-any-return]


def estimates(url: str, task_id: str, **query: Any) -> dict[str, Any]:
    """Return the collector's estimates for a task (analyst token)."""
    response = requests.post(
        f"{url}/v1/tasks/{task_id}/estimates", json=query, headers=bearer(ANALYST), timeout=60
    )
    assert response.status_code == 200, response.text
    return json.loads(response.text)  # type: ignore[no-any-return]
