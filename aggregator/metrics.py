"""Prometheus metrics: reports accepted and rejected by reason, request latency.

Under gunicorn with several workers, ``ldp-aggregator serve`` sets
``PROMETHEUS_MULTIPROC_DIR`` before Python imports prometheus_client, so every worker
writes its samples there and ``/metrics`` sums all workers (prometheus_client's
multiprocess mode; gauges are not used, so nothing is lost in that mode).
"""

from __future__ import annotations

import os
import time

from flask import Flask, Response, g, request
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)

REPORTS_ACCEPTED = Counter("ldp_reports_accepted", "Reports counted into the sums.",
                           ["task_id"])
REPORTS_REJECTED = Counter("ldp_reports_rejected", "Reports refused, by reason.", ["reason"])
REQUESTS = Histogram("ldp_http_request_duration_seconds", "Time to answer a request.",
                     ["endpoint", "method", "status"])


def init_app(app: Flask) -> None:
    """Time every request of the app."""
    app.before_request(_start_timer)
    app.after_request(_observe)


def render() -> Response:
    """Return the metrics of this process, or of every worker in multiprocess mode."""
    registry = REGISTRY
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    return Response(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)


def _start_timer() -> None:
    g.ldp_started = time.perf_counter()


def _observe(response: Response) -> Response:
    started = g.get("ldp_started")
    if started is not None:
        endpoint = request.url_rule.rule if request.url_rule else "unmatched"
        REQUESTS.labels(endpoint, request.method, str(response.status_code)).observe(
            time.perf_counter() - started)
    return response
