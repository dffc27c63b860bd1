"""Gunicorn settings used by ``ldp-aggregator serve`` (bind and workers come from the CLI).

SIGTERM makes gunicorn stop accepting connections and lets each sync worker finish the
request it is handling (up to ``graceful_timeout``), so an in-flight batch commits and is
answered before the process exits.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

from prometheus_client import multiprocess

worker_class = "sync"
accesslog = None  # an access line starts with the client's IP address: never written
errorlog = "-"
# gunicorn logs "Invalid request from ip=..." at WARNING for malformed HTTP: keep its own
# log to errors so no client address is ever written (the CLI prints where it listens).
loglevel = "error"
timeout = 60
graceful_timeout = 30
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
