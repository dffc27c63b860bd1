"""Packaging: the SDK installs only what it needs, and each console script names its extra."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

import ldp_scripts

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=\[ ;]", r, maxsplit=1)[0].lower() for r in requirements}


def test_the_sdk_installs_no_web_server_and_no_plotting() -> None:
    # cryptography: a device seals a sealed task's reports (HPKE), and any task may be sealed
    sdk = {"numpy", "mmh3", "requests", "urllib3", "rfc8785", "cryptography"}
    assert names(PROJECT["dependencies"]) == sdk
    assert {"flask", "gunicorn", "prometheus-client"} <= names(
        PROJECT["optional-dependencies"]["server"]
    )
    assert "matplotlib" in names(PROJECT["optional-dependencies"]["sim"])


def test_every_dependency_declares_a_floor_that_ci_installs() -> None:
    pins = subprocess.run(
        [sys.executable, str(ROOT / ".ci" / "min_requirements.py")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert "urllib3==2.6.3" in pins  # Retry(retry_after_max=...) needs it
    extras = PROJECT["optional-dependencies"]
    declared = set(PROJECT["dependencies"])
    for extra in ("server", "parquet", "postgres", "batch"):
        declared |= set(extras[extra])
    assert len(pins) == len(declared)


@pytest.mark.parametrize(("script", "extra"), [("ldp-aggregator", "server"), ("ldp-sim", "sim")])
def test_a_script_without_its_extra_names_it(
    script: str, extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    needed = ldp_scripts.SCRIPTS[script][1]
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == needed[0] else real(name, *a)
    )
    with pytest.raises(SystemExit) as stopped:
        ldp_scripts.launch(script)
    message = str(stopped.value)
    assert f"pip install 'ldp-telemetry[{extra}]'" in message and needed[0] in message


def test_the_installed_scripts_run() -> None:
    bin_dir = Path(sys.executable).parent
    for script in ldp_scripts.SCRIPTS:
        done = subprocess.run(
            [str(bin_dir / script), "--help"], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        assert "Usage" in done.stdout or "usage" in done.stdout
