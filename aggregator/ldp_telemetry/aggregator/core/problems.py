"""RFC 9457 problem details as data: every error the API returns, for any input.

An :class:`ApiError` raised anywhere in the core or a view becomes ``application/problem+json`` with
a stable ``type`` (``urn:ldp-telemetry:problem:<code>``), a title, the status and a detail that says
what to fix. :data:`ANSWERS` is the one table from an exception to its problem: the Flask handlers
(ldp_telemetry.aggregator.api.errors, and the shuffler's) and the RSGI fast path
(ldp_telemetry.aggregator.serving.rsgi_bridge) answer every exception with :func:`answer_of`, so
both servers send the same bytes; :func:`http_error_parts` answers the web framework's own
HTTP errors (an unknown route, a wrong method) the same way.
"""

from __future__ import annotations

import json as stdlib_json
import logging
from collections.abc import Callable, Iterable
from typing import Any

from ldp_telemetry.aggregator.core.faults import StoreFull, StoreUnavailable
from ldp_telemetry.shared.contract import (
    BAD_REQUEST,
    BODY_TOO_LARGE,
    FORBIDDEN,
    HTTP_ERROR,
    INSUFFICIENT_STORAGE,
    INTERNAL_ERROR,
    METHOD_NOT_ALLOWED,
    NOT_FOUND,
    OPENAPI_PATH,
    PROBLEM_MEDIA_TYPE,
    PROTOCOL_HEADER,
    PROTOCOL_VERSION,
    PROTOCOL_VERSION_1_1,
    TOO_MANY_REPORTS,
    TOO_MANY_REQUESTS,
    UNAUTHORIZED,
    UNAVAILABLE,
    UNSUPPORTED_MEDIA_TYPE,
    UNSUPPORTED_PROTOCOL,
    problem,
    problem_title,
    speaks,
)

log = logging.getLogger(__name__)
SPOKEN = (PROTOCOL_VERSION, PROTOCOL_VERSION_1_1)  # what unsupported_protocol lists
Parts = tuple[int, list[tuple[str, str]], bytes]  # an HTTP answer: status, headers, body


class ApiError(Exception):
    """An error answered as a problem document; ``extra`` fields are added to it."""

    def __init__(self, status: int, code: str, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail, self.extra = status, code, detail, extra
        self.headers: dict[str, str] = {}


def problem_parts(error: ApiError) -> Parts:
    """Return an ApiError's answer as (status, headers, body), framework-free."""
    body = problem(error.status, error.code, error.detail, problem_title(error.code), **error.extra)
    headers = [("Content-Type", PROBLEM_MEDIA_TYPE), *error.headers.items()]
    return error.status, headers, stdlib_json.dumps(body).encode()


def too_large(limit: int) -> ApiError:
    """Return the 413 of a body over ``limit`` bytes: declared, chunked or gzip-expanded,
    on either server and for any route, a client gets this one document."""
    return ApiError(
        413,
        BODY_TOO_LARGE,
        f"the body exceeds {limit} bytes (after decompression); send smaller batches",
        limit=limit,
    )


def too_many_reports(count: int, limit: int) -> ApiError:
    """Return the 413 of a batch holding more than ``limit`` reports (collector or shuffler)."""
    return ApiError(
        413,
        TOO_MANY_REPORTS,
        f"a batch holds at most {limit} reports, got {count}; split it",
        limit=limit,
    )


def check_protocol(version: str | None) -> None:
    """Raise the 400 ``unsupported_protocol`` of an ``LDP-Protocol`` this code does not
    speak (collector or shuffler, PROTOCOL.md §2); no header is a client from before 1.0."""
    if version is not None and not speaks(version):
        raise ApiError(
            400,
            UNSUPPORTED_PROTOCOL,
            f"{PROTOCOL_HEADER} {version[:20]!r} is not spoken here; this collector speaks "
            f"protocol {' and '.join(SPOKEN)}, and takes any 1.x (PROTOCOL.md §2)",
            supported=list(SPOKEN),
        )


def internal_error(error: BaseException) -> ApiError:
    """Log an unexpected exception (its type and where, never the request: it may hold
    reports) and return the 500 problem that answers it."""
    log.error("unexpected %s", type(error).__name__, exc_info=error)
    return ApiError(
        500, INTERNAL_ERROR, "the server failed to handle this request; it has been logged"
    )


def full_error(error: StoreFull) -> ApiError:
    """Log a full disk and return its retryable 507 problem."""
    log.warning("store unavailable: %s", error)
    answer = ApiError(
        507,
        INSUFFICIENT_STORAGE,
        "the collector's disk is full; nothing was stored: retry after the Retry-After delay",
    )
    answer.headers["Retry-After"] = "60"
    return answer


def unavailable_error(error: StoreUnavailable) -> ApiError:
    """Log a store fault and return its retryable 503 problem."""
    # Nothing of the request was committed: a client may resend it as it is.
    log.warning("store unavailable: %s", error)
    answer = ApiError(
        503,
        UNAVAILABLE,
        "the database cannot be written now; nothing was stored: retry after the Retry-After delay",
    )
    answer.headers["Retry-After"] = "1" if "locked" in str(error) else "10"
    return answer


def _as_is(error: ApiError) -> ApiError:
    return error


# Exception -> the problem that answers it; the first row whose type matches wins, so the
# more specific types come first. The Flask app registers a handler per row.
ANSWERS: tuple[tuple[type[Exception], Callable[[Any], ApiError]], ...] = (
    (ApiError, _as_is),
    (StoreFull, full_error),
    (StoreUnavailable, unavailable_error),
    (Exception, internal_error),
)


def problem_of(error: Exception) -> ApiError:
    """Return the problem that answers an exception (:data:`ANSWERS`), logging a store
    fault or a bug on the way."""
    answer = next(answer for kind, answer in ANSWERS if isinstance(error, kind))
    return answer(error)


def answer_of(error: Exception) -> Parts:
    """Return the (status, headers, body) that answers an exception."""
    return problem_parts(problem_of(error))


# The web framework's own HTTP errors (werkzeug's: an unknown route, a wrong method, ...)
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
_FRAMEWORK_HEADERS = ("content-type", "content-length")  # of its HTML page: replaced


def http_error_parts(
    status: int | None,
    name: str,
    description: str | None,
    headers: Iterable[tuple[str, str]],
    declared: int | None,
    limit: int,
) -> Parts:
    """Return the answer to an HTTP error the web framework raised, as problem+json.

    ``name`` (e.g. "Not Found") is the title; ``headers`` are the error's own (e.g. 405's
    Allow). A 413 of a request that did not declare a body within ``limit`` bytes is the
    core's one 413 (:func:`too_large`); werkzeug's form limits keep their own wording.
    """
    if status == 413 and (declared is None or declared > limit):
        return problem_parts(too_large(limit))
    status = status or 500
    code = _HTTP_CODES.get(status, HTTP_ERROR)
    body = problem(status, code, _FIXES.get(status) or description or name, name)
    kept = [(k, v) for k, v in headers if k.lower() not in _FRAMEWORK_HEADERS]
    return status, [("Content-Type", PROBLEM_MEDIA_TYPE), *kept], stdlib_json.dumps(body).encode()
