"""Run the Java SDK from the Python suite: its classes built offline by Maven, a driver run
with the JDK (sdk-java/src/test/java/dev/ldptelemetry/E2eDriver.java)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SDK = ROOT / "sdk-java"
CLASSPATH = f"{SDK / 'target' / 'classes'}:{SDK / 'target' / 'test-classes'}"


def build() -> None:
    """Compile the SDK and its test classes with Maven, offline (make test installs nothing)."""
    missing = [tool for tool in ("mvn", "java") if shutil.which(tool) is None]
    if missing:  # a missing JDK fails the suite: never a silent skip
        pytest.fail(f"tests/sdk_java needs {' and '.join(missing)} (Maven 3.8+, a JDK 11+)")
    subprocess.run(["mvn", "-o", "-q", "-B", "test-compile"], cwd=SDK, check=True, timeout=600)


def driver_command(plan: Path) -> list[str]:
    """Return the command that runs the Java driver on a plan file."""
    return ["java", "-cp", CLASSPATH, "dev.ldptelemetry.E2eDriver", str(plan)]


def run_driver(plan: dict[str, Any], folder: Path, timeout: float = 600) -> dict[str, Any]:
    """Run the driver to its end and return the JSON of its last line."""
    path = folder / f"plan-{plan['mode']}.json"
    path.write_text(json.dumps(plan))
    done = subprocess.run(
        driver_command(path), capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result
