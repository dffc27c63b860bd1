"""RFC 9457 problem details as data: every error the API returns, for any input.

An :class:`ApiError` raised anywhere in the core or a view becomes ``application/problem+json``
with a stable ``type`` (``urn:ldp-telemetry:problem:<code>``), a title, the status and a
detail that says what to fix. Framework-free: the Flask handlers (aggregator.api.errors)
and the RSGI fast path (aggregator.serving.rsgi_bridge) answer with :func:`problem_parts`.
"""

from __future__ import annotations

import json as stdlib_json
import logging
from typing import Any

from aggregator.store.interface import StoreFull, StoreUnavailable
from shared.contract import PROBLEM_MEDIA_TYPE, problem

log = logging.getLogger(__name__)


class ApiError(Exception):
    """An error answered as a problem document; ``extra`` fields are added to it."""

    def __init__(self, status: int, code: str, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail, self.extra = status, code, detail, extra
        self.headers: dict[str, str] = {}


def title(code: str) -> str:
    """Return the problem title of a code (``body_too_large`` -> ``Body too large``)."""
    return code.replace("_", " ").capitalize()


def problem_parts(error: ApiError) -> tuple[int, list[tuple[str, str]], bytes]:
    """Return an ApiError's answer as (status, headers, body), framework-free (the fast
    upload path in aggregator.serving.rsgi_bridge answers with these same bytes)."""
    body = problem(error.status, error.code, error.detail, title(error.code), **error.extra)
    headers = [("Content-Type", PROBLEM_MEDIA_TYPE), *error.headers.items()]
    return error.status, headers, stdlib_json.dumps(body).encode()


def internal_error(error: BaseException) -> ApiError:
    """Log an unexpected exception (its type and where, never the request: it may hold
    reports) and return the 500 problem that answers it."""
    log.error("unexpected %s", type(error).__name__, exc_info=error)
    return ApiError(
        500, "internal_error", "the server failed to handle this request; it has been logged"
    )


def unavailable_error(error: StoreUnavailable) -> ApiError:
    """Log a store fault and return its retryable problem (507 disk full, else 503)."""
    # Nothing of the request was committed: a client may resend it as it is.
    log.warning("store unavailable: %s", error)
    if isinstance(error, StoreFull):
        answer = ApiError(
            507,
            "insufficient_storage",
            "the collector's disk is full; nothing was stored: retry after the Retry-After delay",
        )
        answer.headers["Retry-After"] = "60"
        return answer
    answer = ApiError(
        503,
        "unavailable",
        "the database cannot be written now; nothing was stored: retry after the Retry-After delay",
    )
    answer.headers["Retry-After"] = "1" if "locked" in str(error) else "10"
    return answer
