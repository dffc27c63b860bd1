"""The Flask side of problem details: every error the API answers becomes problem+json.

Exceptions are answered from the core's one table
(:data:`ldp_telemetry.aggregator.core.problems.ANSWERS`), as the RSGI fast path answers them;
werkzeug's HTTP errors through :func:`ldp_telemetry.aggregator.core.problems.http_error_parts`,
a body over ``MAX_BODY_BYTES`` with the core's own 413. A client never sees an HTML page, a 500
body with a traceback, or a stack in a log line that carries request data.
"""

from __future__ import annotations

from flask import Flask, Response, current_app, request
from werkzeug.exceptions import HTTPException

from ldp_telemetry.aggregator.core.problems import ANSWERS, answer_of, http_error_parts


def _response(status: int, headers: list[tuple[str, str]], body: bytes) -> Response:
    return Response(body, status=status, headers=headers)


def _answer(error: Exception) -> Response:
    return _response(*answer_of(error))


def _http_error(error: HTTPException) -> Response:
    limit = int(current_app.config["MAX_BODY_BYTES"])
    return _response(
        *http_error_parts(
            error.code,
            error.name,
            error.description,
            error.get_headers(),
            request.content_length,
            limit,
        )
    )


def init_app(app: Flask) -> None:
    """Register the problem handlers on an app: one per row of the core's table."""
    for kind, _ in ANSWERS:
        app.register_error_handler(kind, _answer)
    app.register_error_handler(HTTPException, _http_error)
