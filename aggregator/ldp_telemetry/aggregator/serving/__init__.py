"""How ``ldp-aggregator serve`` runs a WSGI app: the server models and their limits.

Three models, chosen with ``serve --server`` (the benchmark runs its no-op app through the
same command lines, so a ceiling and a collector figure share every setting):

- ``granian`` (default): a Rust HTTP server (hyper + tokio) that parses requests outside
  Python, running the app behind :mod:`ldp_telemetry.aggregator.serving.rsgi_bridge`. Idle and slow
  connections cost a tokio task or an await, never a Python thread: a request reaches the app's
  thread pool only once its headers and body are complete. Chosen by measurement
  (docs/performance.md).
- ``granian-wsgi``: granian's own WSGI interface; faster per request, but the app's threads
  read the body, so a client dribbling its body holds one. For comparison.
- ``gthread``: gunicorn with a thread pool per worker; idle keep-alive connections wait in
  the worker's poller, but a started request is read by a pool thread.
- ``sync``: gunicorn's one-request-per-process worker; any slow client holds a worker.
  Kept for comparison and for debugging only.

Every limit a client could abuse is set here explicitly rather than left to a default. A
server is given what it serves as a :class:`Served` by the entry module it names
(ldp_telemetry.aggregator.serving.wsgi, ldp_telemetry.shuffler.wsgi): the bridge reads nothing
out of the app.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ldp_telemetry.aggregator.core.intake import Intake

SERVERS = ("granian", "granian-wsgi", "gthread", "sync")
DEFAULT_SERVER = "granian"

# A client must send its complete request headers within this time (granian also applies
# it to an idle keep-alive connection waiting for its next request), else it is closed.
HEADER_TIMEOUT_MS = 5000
KEEPALIVE_SECONDS = 5  # gunicorn: idle keep-alive connections are closed after this
THREADS = 8  # gunicorn gthread / granian-wsgi: app threads per worker process
# granian: connections served at once per worker (a request awaiting its body included;
# each costs a tokio task and an await, not a thread); more wait in the kernel's accept
# queue (BACKLOG). Large, so that hundreds of connections holding a request without its
# body do not queue the others: the bridge bounds how long those may wait
# (rsgi_bridge.BODY_WAIT_SLOTS, CROWDED_BODY_TIMEOUT).
BACKPRESSURE = 1024
BACKLOG = 2048
# granian: every request but uploads (estimates, heavy hitters, the dashboard, /metrics,
# admin) runs on a pool of this many threads per worker, never on the event loop that
# accepts and answers uploads: measured (2 workers, 1-report uploads, an analyst looping
# estimates of 10,000 candidates on k = 65,536), on the loop one estimate stalled every
# upload of its worker for seconds (p99 8.6 -> 91.6 ms, max 6.8 s). Uploads take the
# bridge's fast path: checked on the loop, committed by the worker's group-commit writer
# thread (ldp_telemetry.aggregator.store.group_commit). An app without the fast path (the
# benchmark's no-op) runs on the loop.
APP_THREADS = 2
# ...and those threads run at this much lower CPU priority (nice) than the worker's loop and
# writer thread: an estimate takes a core for seconds, and on a machine of two cores the
# uploads beside it waited for one (benchmarks/README.md, "Queries at a lower priority": upload
# p99 beside the analyst 1.71-1.82x its p99 alone, against 1.89-2.16x without).
APP_NICENESS = 10
MAX_CONNECTIONS = 1000  # gunicorn gthread: open client connections per worker
GRACEFUL_SECONDS = 30  # SIGTERM: in-flight requests get this long to finish and commit
LIMIT_REQUEST_LINE = 4094
LIMIT_HEADER_FIELDS = 50
LIMIT_HEADER_FIELD_SIZE = 8190


WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
DEFAULT_MAX_BODY = 4 * 1024 * 1024  # a bare WSGI app's (the benchmark's no-op) body limit


@dataclass(frozen=True)
class Served:
    """A WSGI app and what the RSGI bridge needs to know to serve it.

    ``threads``: the bridge's pool for the app's requests (0: run them on the event loop);
    ``intake``: the collector's uploads, which take the bridge's fast path (None: every
    request goes to the app). A WSGI server (gunicorn, granian's own WSGI) calls it as the app.
    """

    app: WsgiApp
    max_body: int
    threads: int = APP_THREADS
    intake: Intake | None = None

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        return self.app(environ, start_response)


def command(server: str, target: str, host: str, port: int, workers: int) -> list[str]:
    """Return the argv that serves the WSGI ``target`` ("module:attribute") in a new process.

    A fresh interpreter, always: prometheus_client reads PROMETHEUS_MULTIPROC_DIR when it
    is first imported, so the variable must be set before the server imports the app.
    """
    if server in ("granian", "granian-wsgi"):
        return [
            sys.executable,
            "-m",
            "ldp_telemetry.aggregator.serving.granian_conf",
            "--host",
            host,
            "--port",
            str(port),
            "--workers",
            str(workers),
            *(["--wsgi"] if server == "granian-wsgi" else []),
            target,
        ]
    if server not in SERVERS:
        raise ValueError(f"unknown server {server!r}; choose one of {', '.join(SERVERS)}")
    return [
        sys.executable,
        "-m",
        "gunicorn",
        "--config",
        "python:ldp_telemetry.aggregator.serving.gunicorn_conf",
        "--worker-class",
        server,
        "--bind",
        f"{host}:{port}",
        "--workers",
        str(workers),
        target,
    ]
