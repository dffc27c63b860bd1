"""Read a Flask request's body with the core's checks (ldp_telemetry.aggregator.core.body).

werkzeug's ``request.stream`` stops a body without a declared length (chunked, under
gunicorn) at ``MAX_CONTENT_LENGTH`` bytes: asked for the limit + 1, it gives the limit, a
cut JSON text answered 400 ``invalid_json`` where the fast path says 413; a read past the
cap raises werkzeug's own 413 even when the body ends there; and a raw stream's read may
return fewer bytes than asked. :func:`read_body` reads to the end or just past the limit,
so the core decides, with its one 413 (ldp_telemetry.aggregator.core.problems.too_large).
"""

from __future__ import annotations

from typing import Any

from flask import current_app, request
from werkzeug.wsgi import get_input_stream

from ldp_telemetry.aggregator.core.body import decode_json
from ldp_telemetry.aggregator.core.problems import too_large


def declared_too_large(limit: int) -> bool:
    """Return True if the request's Content-Length alone is over ``limit``."""
    declared = request.content_length
    return declared is not None and declared > limit


def read_body(limit: int) -> bytes:
    """Return the request body, at most ``limit`` + 1 bytes of it, however it is framed;
    raise the 413 of a declared length over ``limit`` without reading the body."""
    if declared_too_large(limit):
        raise too_large(limit)
    stream = get_input_stream(request.environ, max_content_length=None)
    parts, size = [], 0
    while size <= limit:
        part = stream.read(limit + 1 - size)
        if not part:
            break
        parts.append(part)
        size += len(part)
    return b"".join(parts)


def json_body() -> Any:
    """Return the request's parsed JSON body, or raise an ApiError saying what is wrong."""
    limit = int(current_app.config["MAX_BODY_BYTES"])
    return decode_json(
        request.headers.get("Content-Type"),
        request.headers.get("Content-Encoding"),
        read_body(limit),
        limit,
    )
