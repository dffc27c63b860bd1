"""Run the real collector (`ldp-aggregator serve`) on a free loopback port for the demo."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import requests

READY_TIMEOUT = 30.0


@dataclass
class Collector:
    """A running collector: its URL and the demo's admin and analyst tokens."""

    url: str
    admin_token: str
    analyst_token: str
    pid: int = 0  # the serving process group (set once started)

    def post(self, path: str, body: object, token: str) -> dict:
        """POST JSON with a bearer token and return the JSON answer (raise on 4xx/5xx)."""
        response = requests.post(
            self.url + path, json=body, timeout=60, headers={"Authorization": f"Bearer {token}"}
        )
        if response.status_code >= 400:
            raise RuntimeError(f"{path}: {response.status_code} {response.text}")
        return response.json()


def free_port() -> int:
    """Return a loopback port that was free a moment ago."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def new_tokens() -> tuple[str, str]:
    """Return fresh (admin, analyst) tokens for a demo collector (or cluster)."""
    return secrets.token_urlsafe(24), secrets.token_urlsafe(24)


@contextmanager
def running_collector(
    folder: Path,
    database: str | None = None,
    *,
    name: str = "collector",
    tokens: tuple[str, str] | None = None,
) -> Iterator[Collector]:
    """Start a collector (SQLite in ``folder`` unless ``database`` names another); stop it on exit.

    ``tokens`` (admin, analyst) lets several nodes of one cluster accept the same tokens.
    """
    port = free_port()
    collector = Collector(f"http://127.0.0.1:{port}", *(tokens or new_tokens()))
    env = {
        **os.environ,
        "LDP_ADMIN_TOKEN": collector.admin_token,
        "LDP_ANALYST_TOKEN": collector.analyst_token,
    }
    command = [
        sys.executable,
        "-m",
        "ldp_telemetry.aggregator.cli",
        "--db",
        database or str(folder / "ldp.sqlite3"),
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    log_path = folder / f"{name}.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=log, start_new_session=True)
    collector.pid = process.pid
    try:
        _wait_ready(collector.url, process, log_path)
        yield collector
    finally:
        _stop(process)


def _wait_ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if requests.get(url + "/readyz", timeout=2).status_code == 200:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"the collector did not start; its log:\n{log.read_text()[-2000:]}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)  # graceful: in-flight uploads commit
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=5)
