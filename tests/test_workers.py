"""make test's two workers: the scheduler (on pytest-xdist's internals, so pinned and checked)
and each worker's own ports (tests/support/workers.py, tests/support/servers.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import xdist

from tests.support import servers, workers

ROOT = Path(__file__).resolve().parent.parent
GROUPED_TEST = """
import os, time
def test_{i}():
    with open("grouped.txt", "a") as out:
        out.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")
    time.sleep(0.05)
"""
SINGLE_TEST = GROUPED_TEST.replace("grouped", "single").replace("0.05", "0.2")
CONFTEST = """
from tests.support.workers import make_scheduler

def pytest_xdist_make_scheduler(config, log):
    return make_scheduler(config, log, frozenset({"test_grouped.py"}))
"""


def test_a_grouped_module_runs_whole_on_one_worker_and_the_rest_on_both(tmp_path: Path) -> None:
    # Run on the installed pytest-xdist: if an upgrade stopped calling _split_scope, the
    # grouped module's tests would spread over both workers and this fails.
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    for name, text in (("test_grouped.py", GROUPED_TEST), ("test_single.py", SINGLE_TEST)):
        (tmp_path / name).write_text("".join(text.format(i=i) for i in range(8)))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "xdist", "-p", "no:cacheprovider"],
        cwd=tmp_path,  # only pytest-xdist: the venv's other plugins take seconds per worker
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    grouped = (tmp_path / "grouped.txt").read_text().split()
    single = (tmp_path / "single.txt").read_text().split()
    assert len(grouped) == 8 and len(set(grouped)) == 1, grouped
    assert len(single) == 8 and set(single) == {"gw0", "gw1"}, single


def test_another_pytest_xdist_stops_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    workers.check_xdist()  # the installed one is verified
    monkeypatch.setattr(xdist, "__version__", "3.9.0")
    with pytest.raises(pytest.UsageError, match=re.escape(workers.XDIST)):
        workers.make_scheduler(SimpleNamespace(option=SimpleNamespace(dist="load")), None)
    each = SimpleNamespace(option=SimpleNamespace(dist="each"))
    assert workers.make_scheduler(each, None) is None  # another --dist: pytest-xdist's own


def test_pyproject_and_the_min_versions_venv_install_the_verified_range() -> None:
    assert f'"{workers.XDIST}",' in (ROOT / "pyproject.toml").read_text()
    assert f"'{workers.XDIST}'" in (ROOT / "Makefile").read_text()


def test_each_worker_takes_ports_no_other_worker_nor_the_kernel_hands_out() -> None:
    first, second = (servers.worker_ports(f"gw{i}", 2, 32768) for i in range(2))
    assert first.start == servers.FIRST_PORT and first.stop == second.start
    assert second.stop <= 32768 and len(first) == len(second) > 5000
    assert servers.worker_ports(None, 1, 32768) == range(servers.FIRST_PORT, 32768)
    with pytest.raises(RuntimeError, match="too few ports"):
        servers.worker_ports("gw0", 2, servers.FIRST_PORT + 150)
    ports = [servers.free_port() for _ in range(5)]
    assert len(set(ports)) == 5 and all(port in servers._PORTS.range for port in ports)
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    assert servers._PORTS.range.stop <= low  # never a port the kernel gives to port 0
