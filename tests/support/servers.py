"""The real collector as a subprocess, and the tokens the tests give it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

ADMIN, ANALYST = "admin-test-token", "analyst-test-token"
READY_WAIT = 30.0  # seconds to wait for a started server to answer /readyz
# A port free when probed can be bound by another process (the suite's other worker) before
# the server binds it: the server then exits saying so, and starts again on another port.
PORT_TRIES = 3


def bearer(token: str) -> dict[str, str]:
    """Return the Authorization header of a token."""
    return {"Authorization": f"Bearer {token}"}


@dataclass
class Server:
    """A running ``ldp-aggregator serve`` subprocess."""

    url: str
    process: subprocess.Popen[bytes]
    db: Path | str

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send a signal to the server's whole process group and wait for the master."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, sig)
            # A graceful stop may take the server's whole drain time (GRACEFUL_SECONDS, 30 s).
            self.process.wait(timeout=30 if sig == signal.SIGKILL else 45)


def free_port() -> int:
    """Return a loopback port that was free a moment ago."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_server(
    db: Path | str,
    workers: int = 1,
    server: str | None = None,
    own_metrics_dir: bool = False,
    folder: Path | None = None,
    env: dict[str, str] | None = None,
) -> Server:
    """Start the collector on a free loopback port and wait until it is ready.

    ``db``: a SQLite file or a PostgreSQL URL. ``server``: ``serve --server`` (None: its
    default). ``own_metrics_dir``: let ``serve`` make its metrics folder itself, as in
    production, instead of giving it one. ``folder``: where the log and metrics go
    (default: the SQLite file's folder). ``env``: more environment for the server only.
    """
    folder = folder or Path(db).parent
    log_path = (
        db.with_suffix(".log")
        if isinstance(db, Path)
        else folder / f"server-{time.monotonic_ns()}.log"
    )
    env = {
        **os.environ,
        "LDP_ADMIN_TOKEN": ADMIN,
        "LDP_ANALYST_TOKEN": ANALYST,
        "PROMETHEUS_MULTIPROC_DIR": "" if own_metrics_dir else str(_metrics_dir(folder)),
        **(env or {}),
    }
    for _ in range(PORT_TRIES):
        port, logged = free_port(), log_path.stat().st_size if log_path.exists() else 0
        command = [
            sys.executable,
            "-m",
            "ldp_telemetry.aggregator.cli",
            "--db",
            str(db),
            "serve",
            "--port",
            str(port),
            "--workers",
            str(workers),
            *(["--server", server] if server else []),
        ]
        log = open(log_path, "ab")  # noqa: SIM115  # closed with the process
        process = subprocess.Popen(command, env=env, stdout=log, stderr=log, start_new_session=True)
        log.close()
        started = Server(f"http://127.0.0.1:{port}", process, db)
        if _ready(started):
            return started
        started.kill()
        if "Address already in use" not in log_path.read_text(errors="replace")[logged:]:
            break
    raise RuntimeError(f"server did not start: {log_path.read_text()[-3000:]}")


def _ready(server: Server) -> bool:
    """Wait until the server answers /readyz; False if it exits or does not in READY_WAIT."""
    deadline = time.monotonic() + READY_WAIT
    while time.monotonic() < deadline and server.process.poll() is None:
        try:
            ready = requests.get(server.url + "/readyz", timeout=2).status_code == 200
        except (requests.ConnectionError, requests.Timeout):  # not listening, or starting
            ready = False
        # Asked again after the answer: a server that lost its port exits (what answered
        # was then another's); this narrows that race, the retry above handles the exit.
        if ready and server.process.poll() is None:
            return True
        time.sleep(0.1)
    return False


def new_seal_keys(db: Path) -> Path:
    """Make a collector's seal key with ``ldp-aggregator keys new``; return its key file
    (``seal-keys.json`` beside ``db``)."""
    keys = db.parent / "seal-keys.json"
    command = [sys.executable, "-m", "ldp_telemetry.aggregator.cli", "--db", str(db)]
    subprocess.run(
        [*command, "keys", "new", "--keys", str(keys)], check=True, timeout=60, capture_output=True
    )
    return keys


def start_sealing_server(db: Path, **options: Any) -> Server:
    """Start a collector that opens sealed reports: its seal key made by the CLI and given
    to the server alone in LDP_SEAL_KEYS (``options``: :func:`start_server`'s)."""
    return start_server(db, env={"LDP_SEAL_KEYS": str(new_seal_keys(db))}, **options)


def _metrics_dir(parent: Path) -> Path:
    folder = parent / f"metrics-{time.monotonic_ns()}"
    folder.mkdir()
    return folder
