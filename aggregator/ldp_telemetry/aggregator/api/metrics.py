"""Prometheus in the Flask app: time every request, render ``/metrics``.

The metrics themselves (and the multiprocess folder) are ldp_telemetry.aggregator.core.metrics.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, cast

from flask import Flask, Response, request

# Through core.metrics, never prometheus_client directly: core.metrics prepares the
# environment prometheus_client reads when first imported.
from ldp_telemetry.aggregator.core.metrics import exposition, observe_request

if TYPE_CHECKING:
    from flask import Request
    from werkzeug.local import LocalProxy

_STARTED = "ldp.started"


def init_app(app: Flask) -> None:
    """Time every request of the app."""
    app.before_request(_start_timer)
    app.after_request(_observe)


def render() -> Response:
    """Return the metrics of this process, or of every worker in multiprocess mode."""
    body, content_type = exposition()
    return Response(body, content_type=content_type)


def _start_timer() -> None:
    request.environ[_STARTED] = time.perf_counter()


def _observe(response: Response) -> Response:
    # One proxy lookup: flask types ``request`` as the Request it stands for.
    current = cast("LocalProxy[Request]", request)._get_current_object()
    started = current.environ.get(_STARTED)
    if started is not None:
        rule = current.url_rule
        observe_request(
            rule.rule if rule is not None else "unmatched",
            current.method,
            response.status_code,
            time.perf_counter() - started,
        )
    return response
