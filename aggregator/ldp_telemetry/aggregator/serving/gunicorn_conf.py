"""Gunicorn settings used by ``ldp-aggregator serve --server gthread|sync``.

Bind, workers and the worker class come from the command line (ldp_telemetry.aggregator.serving).
SIGTERM makes gunicorn stop accepting connections and lets each worker finish the requests it is
handling (up to ``graceful_timeout``), so an in-flight batch commits and is answered before the
process exits.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

from prometheus_client import multiprocess

from ldp_telemetry.aggregator import serving

worker_class = "gthread"  # the command line says which; this is only the fallback
threads = serving.THREADS  # gthread: requests in the app at once per worker
worker_connections = serving.MAX_CONNECTIONS  # gthread: open connections per worker
keepalive = serving.KEEPALIVE_SECONDS  # idle keep-alive connections closed after this
backlog = serving.BACKLOG
limit_request_line = serving.LIMIT_REQUEST_LINE
limit_request_fields = serving.LIMIT_HEADER_FIELDS
limit_request_field_size = serving.LIMIT_HEADER_FIELD_SIZE
accesslog = None  # an access line starts with the client's IP address: never written
errorlog = "-"
# gunicorn logs "Invalid request from ip=..." at WARNING for malformed HTTP: keep its own
# log to errors so no client address is ever written (the CLI prints where it listens).
loglevel = "error"
timeout = 60  # a worker silent this long (heartbeat) is killed and replaced
graceful_timeout = serving.GRACEFUL_SECONDS
preload_app = False  # each worker opens its own database connections after the fork
control_socket_disable = True  # one fixed socket path per user would clash between collectors


def child_exit(server: Any, worker: Any) -> None:
    """Let the metrics of a dead worker stop counting as live."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        multiprocess.mark_process_dead(worker.pid)


def on_exit(server: Any) -> None:
    """Remove the metrics folder if ``serve`` created it for this run."""
    owned = os.environ.get("LDP_OWNED_METRICS_DIR")
    if owned and owned == os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        shutil.rmtree(owned, ignore_errors=True)
