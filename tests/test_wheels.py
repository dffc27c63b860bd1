"""The wheels as a user gets them: built, installed into a clean venv (not editable), used.

The SDK's wheel must add one import name (``ldp_telemetry``) and no web server; its quick
start (client/README.md) must run there against a real collector; the collector's wheel
must bring the server and answer ``ldp-aggregator --help``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.support.servers import ANALYST, Server, bearer, start_server

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN_MODULES = {"client", "shared", "aggregator", "simulations", "demo", "protocol",
                     "benchmarks", "ldp_scripts"}  # fmt: skip
SERVERS = {"flask", "granian", "gunicorn", "werkzeug"}
INSTALL_TIMEOUT = 600  # seconds: a clean venv downloads numpy, scipy, cryptography, ...


def run(
    command: list[str | Path],
    timeout: float,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> str:
    done = subprocess.run(
        [str(part) for part in command],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=env,
    )
    assert done.returncode == 0, f"{command}: {done.stdout[-2000:]} {done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Build both wheels from this checkout as `python -m build` does: from the sdist (so the
    sdist is proven complete, and the checkout gets no build/ folder)."""
    out = tmp_path_factory.mktemp("dist")
    for project in (ROOT, ROOT / "aggregator"):
        run([sys.executable, "-m", "build", "--outdir", out, project], timeout=INSTALL_TIMEOUT)
    found = {path.name.split("-")[0]: path for path in out.glob("*.whl")}
    assert set(found) == {"ldp_telemetry", "ldp_telemetry_collector"}, found
    return found


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clean virtual environment: no site packages of this one, nothing editable."""
    folder = tmp_path_factory.mktemp("clean") / "venv"
    run([sys.executable, "-m", "venv", folder], timeout=120)
    return folder / "bin"


def top_level(python: Path) -> set[str]:
    """Return the top-level names importable from the venv's site-packages."""
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(run([python, "-c", code], timeout=60).strip())
    return {
        path.name.removesuffix(".py")
        for path in site.iterdir()
        if (path.is_dir() and "." not in path.name and path.name != "__pycache__")
        or path.suffix == ".py"
    }


def test_the_sdk_wheel_holds_only_the_sdk_and_its_math(wheels: dict[str, Path]) -> None:
    files = zipfile.ZipFile(wheels["ldp_telemetry"]).namelist()
    tops = {name.split("/")[0] for name in files}
    assert tops == {"ldp_telemetry", "ldp_telemetry-0.1.0.dist-info"}
    packages = {
        "/".join(name.split("/")[:2]) for name in files if name.startswith("ldp_telemetry/")
    }
    assert packages == {"ldp_telemetry/client", "ldp_telemetry/shared"}


@pytest.fixture(scope="module")
def collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """This checkout's collector with the quick start's task (as client/README.md makes it)."""
    folder = tmp_path_factory.mktemp("collector")
    db = folder / "collector.sqlite3"
    command = [sys.executable, "-m", "ldp_telemetry.aggregator.cli", "--db", db, "tasks", "create",
               "--task-id", "fonts", "--mechanism", "grr", "--epsilon", "2",
               "--domain", "Inter,Roboto,Lato", "--min-batch-size", "1"]  # fmt: skip
    run(command, timeout=60)
    server = start_server(db)
    yield server
    server.kill()


def quick_start() -> str:
    """Return the Python block of client/README.md's quick start."""
    text = (ROOT / "client" / "README.md").read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block is not None, "client/README.md's quick start has no Python block"
    return block.group(1)


def test_the_sdk_wheel_installs_alone_and_its_quick_start_runs(
    wheels: dict[str, Path], venv: Path, collector: Server, tmp_path: Path
) -> None:
    run([venv / "python", "-m", "pip", "install", "--quiet", wheels["ldp_telemetry"]],
        timeout=INSTALL_TIMEOUT)  # fmt: skip
    installed = top_level(venv / "python")
    assert "ldp_telemetry" in installed
    assert not installed & FORBIDDEN_MODULES, installed & FORBIDDEN_MODULES
    assert not installed & SERVERS, installed & SERVERS
    script = tmp_path / "quick_start.py"
    script.write_text(quick_start().replace("http://127.0.0.1:8000", collector.url))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LDP_", "PYTHON"))}
    printed = run([venv / "python", script], cwd=tmp_path, env=env, timeout=120)
    assert printed.strip() == "1 report sent"
    answer = requests.post(
        f"{collector.url}/v1/tasks/fonts/estimates",
        json={"candidates": ["Inter"]},
        headers=bearer(ANALYST),
        timeout=30,
    )
    assert answer.status_code == 200 and answer.json()["n"] == 1, answer.text


def test_the_collector_wheel_brings_its_server(wheels: dict[str, Path], venv: Path) -> None:
    run([venv / "python", "-m", "pip", "install", "--quiet", wheels["ldp_telemetry_collector"]],
        timeout=INSTALL_TIMEOUT)  # fmt: skip
    assert "Usage: ldp-aggregator" in run([venv / "ldp-aggregator", "--help"], timeout=60)
    installed = top_level(venv / "python")
    assert not installed & FORBIDDEN_MODULES, installed & FORBIDDEN_MODULES
    assert {"flask", "granian"} <= installed
