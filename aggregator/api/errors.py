"""The Flask side of problem details: every error an app answers becomes problem+json.

werkzeug's HTTP errors and unexpected exceptions are wrapped like an
:class:`~aggregator.core.problems.ApiError`, so a client never sees an HTML page, a 500
body with a traceback, or a stack in a log line that carries request data.
"""

from __future__ import annotations

from typing import Any

from flask import Flask, Response, json
from werkzeug.exceptions import HTTPException

from aggregator.core.problems import ApiError, internal_error, problem_parts, unavailable_error
from aggregator.store import StoreUnavailable
from shared.contract import PROBLEM_MEDIA_TYPE, problem

_HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "body_too_large",
    415: "unsupported_media_type",
    429: "too_many_requests",
    503: "unavailable",
}

_FIXES = {
    413: "the body is larger than the server accepts (MAX_BODY_BYTES); send smaller batches",
    405: "this URL does not take this method; see GET /v1/openapi.json",
}


def problem_response(
    status: int, code: str, title: str, detail: str, extra: dict[str, Any] | None = None
) -> Response:
    """Return a problem+json response."""
    body = problem(status, code, detail, title, **(extra or {}))
    return Response(json.dumps(body), status=status, mimetype=PROBLEM_MEDIA_TYPE)


def error_response(error: ApiError) -> Response:
    """Return the problem response of an ApiError."""
    status, headers, body = problem_parts(error)
    response = Response(body, status=status)
    response.headers.update(headers)
    return response


def _http_error(error: HTTPException) -> Response:
    status = error.code or 500
    code = _HTTP_CODES.get(status, "http_error")
    detail = _FIXES.get(status) or error.description or error.name
    response = problem_response(status, code, error.name, detail)
    for name, value in error.get_headers():
        if name.lower() not in ("content-type", "content-length"):
            response.headers[name] = value
    return response


def _unexpected(error: Exception) -> Response:
    return error_response(internal_error(error))


def _unavailable(error: StoreUnavailable) -> Response:
    return error_response(unavailable_error(error))


def init_app(app: Flask) -> None:
    """Register the problem handlers on an app (a store fault: its retryable problem)."""
    app.register_error_handler(ApiError, error_response)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(StoreUnavailable, _unavailable)
    app.register_error_handler(Exception, _unexpected)
