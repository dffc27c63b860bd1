"""Prometheus metrics: reports accepted and rejected by reason, request latency.

Framework-free (the store, the core and the RSGI bridge count here); the Flask request
timing and ``/metrics`` rendering are ldp_telemetry.aggregator.api.metrics, the dashboard's
ingest counts read :func:`current_registry`. The others reach prometheus_client through this
module (gunicorn's master, ldp_telemetry.aggregator.serving.gunicorn_conf, aside), which must be
the first to import it (below).

With several worker processes, ``ldp-aggregator serve`` sets
``PROMETHEUS_MULTIPROC_DIR`` before Python imports prometheus_client, so every worker
writes its samples there and ``/metrics`` sums all workers (prometheus_client's
multiprocess mode; gauges are not used, so nothing is lost in that mode).

That folder is one per run (:func:`claim_run_dir`), under a root on another file system than
the database's (:func:`metrics_root`), and never leaks: a server removes it when it exits,
and a run killed with ``kill -9`` leaves a folder whose lock nobody holds, which the next
``serve`` removes.
"""

from __future__ import annotations

import collections
import fcntl
import os
import shutil
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# prometheus_client picks its multiprocess mode when first imported, on the variable being
# present: an empty value would have it write each unlabelled metric's file into the
# working directory. Empty means unset here (``serve`` then makes the run's folder).
if os.environ.get("PROMETHEUS_MULTIPROC_DIR") == "":
    del os.environ["PROMETHEUS_MULTIPROC_DIR"]

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)

REPORTS_ACCEPTED = Counter("ldp_reports_accepted", "Reports counted into the sums.", ["task_id"])
REPORTS_REJECTED = Counter("ldp_reports_rejected", "Reports refused, by reason.", ["reason"])
REQUESTS = Histogram(
    "ldp_http_request_duration_seconds",
    "Time to answer a request.",
    ["endpoint", "method", "status"],
)
# Requests that ended without a complete exchange (ldp_telemetry.aggregator.serving.rsgi_bridge): a
# client that closed or broke its connection mid-body, a body that did not arrive in time, an answer
# the client was no longer there to take. The client's problem, counted, never logged.
ABORTED = Counter(
    "ldp_http_aborted",
    "Requests ended by the client's connection, by reason.",
    ["reason"],
)
# Group commit (ldp_telemetry.aggregator.store.group_commit): how much each store transaction
# carried.
GROUP_UPLOADS = Histogram(
    "ldp_group_commit_uploads",
    "Uploads committed by one store transaction.",
    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256),
)
GROUP_REPORTS = Histogram(
    "ldp_group_commit_reports",
    "Reports committed by one store transaction.",
    buckets=(1, 10, 100, 500, 1000, 5000, 10000, 50000),
)
# How long a write transaction waited for the database's write lock (another process's
# transaction): the cost of serializing the workers' commits.
STORE_LOCK_WAIT = Histogram(
    "ldp_store_lock_wait_seconds",
    "Time a store write waited for the write lock.",
    buckets=(0.0001, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1.0, 5.0),
)

RUN_PREFIX = "run-"
LOCK_NAME = "owner.lock"  # MultiProcessCollector reads only *.db files
STARTING_GRACE = 60.0  # s: a folder without its lock yet may be a run starting now


# Where the run folders go, first choice first: memory, then the temporary folder.
ROOT_CANDIDATES = (Path("/dev/shm"), Path(tempfile.gettempdir()))


def metrics_root(database_folder: Path) -> Path:
    """Return a folder for the metrics files on a file system other than the database's.

    prometheus_client's files are memory maps: writing a page of one on a full file system
    is a SIGBUS that kills the worker, and its respawn, until granian gives up (measured: a
    full disk under the database ended the collector for good). The database's disk is the
    one that fills; the metrics must not share it. Falls back to the database's folder if
    every candidate is on its file system or unwritable.
    """
    device = database_folder.stat().st_dev
    for candidate in ROOT_CANDIDATES:
        try:
            usable = candidate.is_dir() and os.access(candidate, os.W_OK | os.X_OK)
            if usable and candidate.stat().st_dev != device:
                return candidate / f"ldp-metrics-{os.getuid()}"
        except OSError:
            continue
    return database_folder / "ldp-metrics"


def claim_run_dir(root: Path) -> Path:
    """Return a new metrics folder under ``root``, locked for the life of this run.

    The lock is an ``flock`` on a file in the folder, taken on a descriptor that is kept
    open and inheritable: the server ``exec``-ed next and its forked workers hold it, and
    the kernel drops it when the last of them dies, however it dies. A folder whose lock
    can be taken therefore belongs to no live process: it is removed here, before the new
    folder is made (no pid checks, so pid reuse cannot keep or remove the wrong folder).
    """
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    for stale in root.glob(f"{RUN_PREFIX}*"):
        if _unowned(stale):
            shutil.rmtree(stale, ignore_errors=True)
    folder = Path(tempfile.mkdtemp(prefix=f"{RUN_PREFIX}{os.getpid()}-", dir=root))
    descriptor = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(descriptor, fcntl.LOCK_EX)
    os.set_inheritable(descriptor, True)  # deliberately never closed: it is the claim
    return folder


def _unowned(folder: Path) -> bool:
    try:
        descriptor = os.open(folder / LOCK_NAME, os.O_RDWR)
    except FileNotFoundError:
        # Killed between mkdtemp and creating its lock, or a run starting right now.
        return time.time() - folder.stat().st_mtime > STARTING_GRACE
    except OSError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(descriptor)  # closing also releases the lock if it was taken
    return True


def current_registry() -> CollectorRegistry:
    """Return the registry of this process, or of every worker in multiprocess mode."""
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return REGISTRY
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    return registry


def exposition() -> tuple[bytes, str]:
    """Return the metrics of this process, or of every worker in multiprocess mode, and
    their content type."""
    return generate_latest(current_registry()), CONTENT_TYPE_LATEST


# Label values come from closed sets (route templates, these methods, status codes, reasons,
# stored tasks' ids), so an attacker cannot grow the series; each series' child is looked up
# once per process (``labels`` takes a lock and checks its values: measured ~2 µs a call).
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
_children: dict[tuple[str, str, int], Any] = {}
_accepted: dict[str, Any] = {}
_rejected: dict[str, Any] = {}


def observe_request(endpoint: str, method: str, status: int, seconds: float) -> None:
    """Record one answered request (``endpoint``: its route template)."""
    key = (endpoint, method if method in _METHODS else "other", status)
    child = _children.get(key)
    if child is None:
        child = _children[key] = REQUESTS.labels(key[0], key[1], str(key[2]))
    child.observe(seconds)


def count_accepted(task_id: str, count: int) -> None:
    """Add ``count`` reports counted into a stored task's sums."""
    child = _accepted.get(task_id)
    if child is None:
        child = _accepted[task_id] = REPORTS_ACCEPTED.labels(task_id)
    child.inc(count)


def count_rejected(reasons: Iterable[str]) -> None:
    """Add one refused report per reason given (``reasons``: ldp_telemetry.shared.errors' codes)."""
    for reason, count in collections.Counter(reasons).items():
        child = _rejected.get(reason)
        if child is None:
            child = _rejected[reason] = REPORTS_REJECTED.labels(reason)
        child.inc(count)
