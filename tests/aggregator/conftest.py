"""Fixtures: the Flask app on a temp database, and the real server as a subprocess."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
from flask import Flask
from flask.testing import FlaskClient

from aggregator import create_app

ADMIN, ANALYST = "admin-test-token", "analyst-test-token"
READY_WAIT = 30.0  # seconds to wait for a started server to answer /readyz


@pytest.fixture
def app(tmp_path: Path) -> Flask:
    """Return an app on a fresh database with known admin and analyst tokens."""
    return create_app({"TESTING": True, "DATABASE": str(tmp_path / "test.sqlite3"),
                       "ADMIN_TOKEN": ADMIN, "ANALYST_TOKEN": ANALYST})


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    """Return a test client of the app."""
    return app.test_client()


def bearer(token: str) -> dict[str, str]:
    """Return the Authorization header of a token."""
    return {"Authorization": f"Bearer {token}"}


@dataclass
class Server:
    """A running ``ldp-aggregator serve`` subprocess."""

    url: str
    process: subprocess.Popen[bytes]
    db: Path

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send a signal to the server's whole process group and wait for the master."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, sig)
            self.process.wait(timeout=30)


def free_port() -> int:
    """Return a loopback port that was free a moment ago."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_server(db: Path, workers: int = 1) -> Server:
    """Start the collector on a free loopback port and wait until it is ready."""
    port = free_port()
    env = {**os.environ, "LDP_ADMIN_TOKEN": ADMIN, "LDP_ANALYST_TOKEN": ANALYST,
           "PROMETHEUS_MULTIPROC_DIR": str(_metrics_dir(db))}
    command = [sys.executable, "-m", "aggregator.cli", "--db", str(db), "serve", "--port",
               str(port), "--workers", str(workers)]
    log = open(db.with_suffix(".log"), "ab")  # noqa: SIM115  # closed with the process
    process = subprocess.Popen(command, env=env, stdout=log, stderr=log,
                               start_new_session=True)
    log.close()
    server = Server(f"http://127.0.0.1:{port}", process, db)
    deadline = time.monotonic() + READY_WAIT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            if requests.get(server.url + "/readyz", timeout=2).status_code == 200:
                return server
        except requests.ConnectionError:
            time.sleep(0.1)
    server.kill()
    raise RuntimeError(f"server did not start; see {db.with_suffix('.log')}")


def _metrics_dir(db: Path) -> Path:
    folder = db.parent / f"metrics-{db.stem}-{time.monotonic_ns()}"
    folder.mkdir()
    return folder


@pytest.fixture
def server_factory(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    """Yield a function starting servers; every one is killed at the end of the test."""
    started: list[Server] = []

    def start(db: Path | None = None, workers: int = 1) -> Server:
        started.append(start_server(db or tmp_path / "server.sqlite3", workers))
        return started[-1]

    yield start
    for server in started:
        server.kill()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Yield one server shared by a module's tests (each test uses its own tasks)."""
    running = start_server(tmp_path_factory.mktemp("server") / "shared.sqlite3")
    yield running
    running.kill()
