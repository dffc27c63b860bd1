"""The real collector as a subprocess, and the tokens the tests give it."""

from __future__ import annotations

import itertools
import os
import random
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
# A port of this worker's (free_port) is bound by no other process of the run, but something
# else on the machine may take it between the probe and the server's bind: the server then
# exits saying so, and starts again on another port.
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
    """Return a loopback port of this worker's own range that was free a moment ago.

    Not one the kernel hands out (port 0): a port free when probed could be bound, before
    the server binds it, by another worker's server or taken by any outgoing connection,
    and a server that lost its port could then be answered by another's. This worker's
    ports are in none of those: below the ephemeral range (which port 0 and connections
    use) and in no other worker's slice. Consecutive calls return different ports.
    """
    for _ in range(len(_PORTS.range)):
        port = _PORTS.range[next(_PORTS.turn) % len(_PORTS.range)]
        with socket.socket() as probe:  # held by something outside this run: skipped
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise RuntimeError(f"no free port in {_PORTS.range}")


def worker_ports(worker: str | None, workers: int, ephemeral_low: int) -> range:
    """Return the ports of a worker (``gw<i>`` of ``workers``; None: the only process):
    its equal slice of [FIRST_PORT, ephemeral_low)."""
    index = int(worker[2:]) if worker else 0
    size = (ephemeral_low - FIRST_PORT) // max(workers, 1)
    if size < 100:
        raise RuntimeError(f"too few ports below the ephemeral range ({ephemeral_low})")
    return range(FIRST_PORT + index * size, FIRST_PORT + (index + 1) * size)


class _Ports:
    """This process's ports (pytest-xdist sets the variables in each worker) and where the
    next is looked for: a random start, so that a rerun does not meet its last run's ports."""

    def __init__(self) -> None:
        try:
            low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
        except (OSError, ValueError, IndexError):  # not Linux: its documented default
            low = 32768
        count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
        self.range = worker_ports(os.environ.get("PYTEST_XDIST_WORKER"), count, low)
        self.turn = itertools.count(random.randrange(len(self.range)))


FIRST_PORT = 10000  # below: well-known services' ports
_PORTS = _Ports()


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
        # Asked again after the answer: a server that lost its port (to something outside
        # this run, see free_port) exits, and what answered was not it.
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
