"""The Flask side of problem details: every error an app answers becomes problem+json.

Exceptions are answered from the core's one table
(:data:`ldp_telemetry.aggregator.core.problems.ANSWERS`), as the RSGI fast path answers them;
werkzeug's HTTP errors are wrapped the same way, a body over ``MAX_BODY_BYTES`` with the core's own
413. A client never sees an HTML page, a 500 body with a traceback, or a stack in a log line that
carries request data.
"""

from __future__ import annotations

from typing import Any

from flask import Flask, Response, current_app, json, request
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from ldp_telemetry.aggregator.core.problems import ANSWERS, answer_of, problem_parts, too_large
from ldp_telemetry.shared.contract import (
    BAD_REQUEST,
    BODY_TOO_LARGE,
    FORBIDDEN,
    HTTP_ERROR,
    METHOD_NOT_ALLOWED,
    NOT_FOUND,
    OPENAPI_PATH,
    PROBLEM_MEDIA_TYPE,
    TOO_MANY_REQUESTS,
    UNAUTHORIZED,
    UNAVAILABLE,
    UNSUPPORTED_MEDIA_TYPE,
    problem,
)

_HTTP_CODES = {
    400: BAD_REQUEST,
    401: UNAUTHORIZED,
    403: FORBIDDEN,
    404: NOT_FOUND,
    405: METHOD_NOT_ALLOWED,
    413: BODY_TOO_LARGE,
    415: UNSUPPORTED_MEDIA_TYPE,
    429: TOO_MANY_REQUESTS,
    503: UNAVAILABLE,
}

_FIXES = {
    413: "the body is larger than the server accepts; send smaller batches",
    405: f"this URL does not take this method; see GET {OPENAPI_PATH}",
}


def problem_response(
    status: int, code: str, title: str, detail: str, extra: dict[str, Any] | None = None
) -> Response:
    """Return a problem+json response."""
    body = problem(status, code, detail, title, **(extra or {}))
    return Response(json.dumps(body), status=status, mimetype=PROBLEM_MEDIA_TYPE)


def _response(status: int, headers: list[tuple[str, str]], body: bytes) -> Response:
    return Response(body, status=status, headers=headers)


def _answer(error: Exception) -> Response:
    return _response(*answer_of(error))


def _http_error(error: HTTPException) -> Response:
    if isinstance(error, RequestEntityTooLarge) and _over_the_body_limit():
        return _response(*problem_parts(too_large(int(current_app.config["MAX_BODY_BYTES"]))))
    status = error.code or 500
    code = _HTTP_CODES.get(status, HTTP_ERROR)
    detail = _FIXES.get(status) or error.description or error.name
    response = problem_response(status, code, error.name, detail)
    for name, value in error.get_headers():
        if name.lower() not in ("content-type", "content-length"):
            response.headers[name] = value
    return response


def _over_the_body_limit() -> bool:
    """Return True unless the request declared a body within MAX_BODY_BYTES (werkzeug's
    form limits also raise 413: those keep werkzeug's own wording)."""
    declared = request.content_length
    return declared is None or declared > int(current_app.config["MAX_BODY_BYTES"])


def init_app(app: Flask) -> None:
    """Register the problem handlers on an app: one per row of the core's table."""
    for kind, _ in ANSWERS:
        app.register_error_handler(kind, _answer)
    app.register_error_handler(HTTPException, _http_error)
