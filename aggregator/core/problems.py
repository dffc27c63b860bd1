"""RFC 9457 problem details: every error the API returns, for any input.

An :class:`ApiError` raised anywhere in a view becomes ``application/problem+json`` with a
stable ``type`` (``urn:ldp-telemetry:problem:<code>``), a title, the status and a detail that
says what to fix; werkzeug's HTTP errors and unexpected exceptions are wrapped the same way
so a client never sees an HTML page, a 500 body with a traceback, or a stack in a log line
that carries request data.
"""

from __future__ import annotations

import json as stdlib_json
import logging
from typing import Any

from flask import Flask, Response, json
from werkzeug.exceptions import HTTPException

from shared.contract import PROBLEM_MEDIA_TYPE, problem

log = logging.getLogger(__name__)

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


class ApiError(Exception):
    """An error answered as a problem document; ``extra`` fields are added to it."""

    def __init__(self, status: int, code: str, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail, self.extra = status, code, detail, extra
        self.headers: dict[str, str] = {}


def problem_response(
    status: int, code: str, title: str, detail: str, extra: dict[str, Any] | None = None
) -> Response:
    """Return a problem+json response."""
    body = problem(status, code, detail, title, **(extra or {}))
    return Response(json.dumps(body), status=status, mimetype=PROBLEM_MEDIA_TYPE)


def _title(code: str) -> str:
    return code.replace("_", " ").capitalize()


def error_response(error: ApiError) -> Response:
    """Return the problem response of an ApiError."""
    status, headers, body = problem_parts(error)
    response = Response(body, status=status)
    response.headers.update(headers)
    return response


def problem_parts(error: ApiError) -> tuple[int, list[tuple[str, str]], bytes]:
    """Return an ApiError's answer as (status, headers, body), framework-free (the fast
    upload path in aggregator.serving.rsgi_bridge answers with these same bytes)."""
    body = problem(error.status, error.code, error.detail, _title(error.code), **error.extra)
    headers = [("Content-Type", PROBLEM_MEDIA_TYPE), *error.headers.items()]
    return error.status, headers, stdlib_json.dumps(body).encode()


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


def internal_error(error: BaseException) -> ApiError:
    """Log an unexpected exception (its type and where, never the request: it may hold
    reports) and return the 500 problem that answers it."""
    log.error("unexpected %s", type(error).__name__, exc_info=error)
    return ApiError(
        500, "internal_error", "the server failed to handle this request; it has been logged"
    )


def init_app(app: Flask) -> None:
    """Register the problem handlers on an app."""
    app.register_error_handler(ApiError, error_response)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(Exception, _unexpected)
