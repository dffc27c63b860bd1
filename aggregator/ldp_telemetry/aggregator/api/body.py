"""Read a Flask request's body with the core's checks (ldp_telemetry.aggregator.core.body).

werkzeug's ``request.stream`` stops a body without a declared length (chunked, under
gunicorn) at ``MAX_CONTENT_LENGTH`` bytes: asked for the limit + 1, it gives the limit, a
cut JSON text answered 400 ``invalid_json`` where the fast path says 413; a read past the
cap raises werkzeug's own 413 even when the body ends there. So the raw input stream is
read (:func:`ldp_telemetry.aggregator.core.body.read_capped`), and the core decides, with
its one 413 (ldp_telemetry.aggregator.core.problems.too_large).
"""

from __future__ import annotations

from typing import Any

from flask import current_app, request
from werkzeug.wsgi import get_input_stream

from ldp_telemetry.aggregator.core import body


def declared_too_large(limit: int) -> bool:
    """Return True if the request's Content-Length alone is over ``limit``."""
    return body.declared_too_large(request.content_length, limit)


def read_body(limit: int) -> bytes:
    """Return the request body, at most ``limit`` + 1 bytes of it, however it is framed;
    raise the 413 of a declared length over ``limit`` without reading the body."""
    stream = get_input_stream(request.environ, max_content_length=None)
    return body.read_capped(stream.read, request.content_length, limit)


def json_body() -> Any:
    """Return the request's parsed JSON body, or raise an ApiError saying what is wrong."""
    limit = int(current_app.config["MAX_BODY_BYTES"])
    return body.decode_json(
        request.headers.get("Content-Type"),
        request.headers.get("Content-Encoding"),
        read_body(limit),
        limit,
    )
