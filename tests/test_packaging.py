"""Packaging: the SDK installs only what it needs, the collector is its own distribution."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
SDK = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
COLLECTOR = tomllib.loads((ROOT / "aggregator" / "pyproject.toml").read_text())["project"]
EXTRAS = ("postgres", "parquet", "archive")


def names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=\[ ;]", r, maxsplit=1)[0].lower() for r in requirements}


def test_the_sdk_installs_no_web_server_and_no_plotting() -> None:
    # cryptography: a device seals a sealed task's reports (HPKE), and any task may be sealed
    sdk = {"numpy", "mmh3", "requests", "urllib3", "rfc8785", "cryptography"}
    assert names(SDK["dependencies"]) == sdk
    assert set(SDK["optional-dependencies"]) == {"dev"}  # no extra an app could pull a server by


def test_the_collector_brings_the_server_and_the_sdk_it_shares_the_math_with() -> None:
    server = {"flask", "gunicorn", "granian", "prometheus-client"}
    assert server | {"ldp-telemetry"} <= names(COLLECTOR["dependencies"])
    assert f"ldp-telemetry=={SDK['version']}" in COLLECTOR["dependencies"]
    assert COLLECTOR["scripts"] == {"ldp-aggregator": "ldp_telemetry.aggregator.cli:main"}


def test_every_dependency_declares_a_floor_that_ci_installs() -> None:
    pins = subprocess.run(
        [sys.executable, str(ROOT / ".ci" / "min_requirements.py")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert "urllib3==2.6.3" in pins  # Retry(retry_after_max=...) needs it
    declared = set(SDK["dependencies"]) | set(COLLECTOR["dependencies"])
    for extra in EXTRAS:
        declared |= set(COLLECTOR["optional-dependencies"][extra])
    ours = {r for r in declared if r.startswith("ldp-telemetry")}
    assert len(pins) == len(declared - ours)


def test_the_installed_script_runs() -> None:
    done = subprocess.run(
        [str(Path(sys.executable).parent / "ldp-aggregator"), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "Usage" in done.stdout
