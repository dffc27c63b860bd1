"""The collector's HTTP contract, once: every path, header, rejection reason and problem code
that the collector, its upload bridge, the shuffler, the in-memory transport and both SDKs
agree on (PROTOCOL.md §§1, 2, 7). A new reason, problem or path is one edit here: the
TypeScript SDK's ``sdk-js/src/contract.ts`` is generated from this module
(``python -m protocol.contract_ts --write``; a test fails while it differs) and the OpenAPI
document reads it.

- Paths are templates (``{task_id}``): :func:`fill` fills one, :func:`rule` writes it as a
  route rule.
- Upload answers (:class:`UploadAnswer`): ``{"accepted": n, "rejected": [{"report_id",
  "reason", "message"}]}``, ``reason`` one of :data:`REJECTION_REASONS`; a report id seen
  before is rejected as ``report_replayed`` (a retrying client treats it as delivered).
- Tasks are served with their fingerprint as a strong ETag and ``CACHE_CONTROL``.
- Errors are RFC 9457 problem documents (:class:`Problem`) whose ``type`` is
  ``PROBLEM_TYPE`` + one of :data:`PROBLEM_CODES`.

Only the standard library is imported: every layer below the collector (the codec, sealing,
the errors) imports this module.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

PROTOCOL_VERSION = "1.0"  # PROTOCOL.md's version, served in every task's JSON
# The version a task that uses what 1.0 lacks is served with (PROTOCOL.md §1.1): declared
# dimensions, or a 1.1 longitudinal variant (LOLOHA, numeric 1bit). A task without them stays
# 1.0, byte for byte, so 1.0 devices and every fingerprint keep working.
PROTOCOL_VERSION_1_1 = "1.1"
# Uploads name the protocol version they follow (PROTOCOL.md §2); a collector refuses a
# major version it does not speak. Absent: a client from before 1.0, still accepted.
PROTOCOL_HEADER = "LDP-Protocol"

# Paths (PROTOCOL.md §§1, 2; the OpenAPI document describes each).
TASKS_PATH = "/v1/tasks"  # GET: every task; POST: create one (admin)
TASK_PATH = TASKS_PATH + "/{task_id}"  # GET: one task's public configuration
UPLOAD_PATH = TASK_PATH + "/reports"  # POST a batch here
UPLOAD_KEY_PATH = TASK_PATH + "/upload-key"  # GET (shuffler): the upload key's SHA-256
SHUFFLED_PATH = TASK_PATH + "/shuffled/{batch_id}"  # PUT (shuffler): a shuffled batch
SHUFFLED_UPLOADS = "uploads"  # SHUFFLED_PATH's query parameter: the distinct uploads, K
# SHUFFLED_PATH's query parameter for a task with dimensions: "slice:K,slice:K" (the
# distinct uploads among each slice's reports of the batch; PROTOCOL.md §1.1).
SHUFFLED_SLICES = "slices"
ESTIMATES_PATH = TASK_PATH + "/estimates"  # POST (analyst)
HEAVY_HITTERS_PATH = TASK_PATH + "/heavy-hitters"  # POST (analyst)
OPENAPI_PATH = "/v1/openapi.json"
HEALTH_PATH = "/healthz"  # liveness
READY_PATH = "/readyz"  # readiness: the store accepts a write (a shuffler: its spool has room)
METRICS_PATH = "/metrics"  # Prometheus

CACHE_CONTROL = "public, max-age=60"
PROBLEM_TYPE = "urn:ldp-telemetry:problem:"
PROBLEM_MEDIA_TYPE = "application/problem+json"

# Why a report was rejected: the ``reason`` of an upload answer's ``rejected`` entries
# (PROTOCOL.md §2), stable codes that clients act on.
INVALID_MESSAGE = "invalid_message"
REPORT_REPLAYED = "report_replayed"
REPORT_TOO_EARLY = "report_too_early"
REPORT_EXPIRED = "report_expired"
OUTDATED_CONFIG = "outdated_config"
IMPLAUSIBLE_REPORT = "implausible_report"
SEALED_INVALID = "sealed_invalid"  # sealed tasks (PROTOCOL.md §10)
# Protocol 1.1: the plaintext opened is not padded to §10's length (its sealer leaks).
SEALED_PADDING = "sealed_padding"
UNKNOWN_SEAL_KEY = "unknown_seal_key"
# Tasks that declare dimensions (PROTOCOL.md §2): the report's clear ``dims`` object.
DIMENSIONS_MISSING = "dimensions_missing"  # no dims, or a declared name absent
DIMENSION_UNDECLARED = "dimension_undeclared"  # a name not declared, or dims on a plain task
DIMENSION_VALUE_UNKNOWN = "dimension_value_unknown"  # not in the list nor "other"
REJECTION_REASONS = (
    INVALID_MESSAGE,
    REPORT_REPLAYED,
    REPORT_TOO_EARLY,
    REPORT_EXPIRED,
    OUTDATED_CONFIG,
    IMPLAUSIBLE_REPORT,
    SEALED_INVALID,
    SEALED_PADDING,
    UNKNOWN_SEAL_KEY,
    DIMENSIONS_MISSING,
    DIMENSION_UNDECLARED,
    DIMENSION_VALUE_UNKNOWN,
)
REPLAYED_MESSAGE = (
    "this report id was already received and counted; a retrying client may treat this as success"
)

# The codes of problem documents (``type`` = PROBLEM_TYPE + code), by what they answer.
# A request as HTTP: its framing, body and headers.
BAD_REQUEST = "bad_request"
METHOD_NOT_ALLOWED = "method_not_allowed"
NOT_FOUND = "not_found"
HTTP_ERROR = "http_error"  # an HTTP status no other code names
REQUEST_TIMEOUT = "request_timeout"
INCOMPLETE_BODY = "incomplete_body"
BODY_TOO_LARGE = "body_too_large"  # a body over MAX_BODY_BYTES, however it was framed
UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"
INVALID_GZIP = "invalid_gzip"
INVALID_JSON = "invalid_json"
UNSUPPORTED_PROTOCOL = "unsupported_protocol"
# Who asks, and how often.
UNAUTHORIZED = "unauthorized"
FORBIDDEN = "forbidden"
TOO_MANY_REQUESTS = "too_many_requests"
# Tasks, uploads and queries.
UNKNOWN_TASK = "unknown_task"
INVALID_TASK = "invalid_task"
TASK_EXISTS = "task_exists"
INVALID_BATCH = "invalid_batch"
TOO_MANY_REPORTS = "too_many_reports"
INVALID_QUERY = "invalid_query"
QUERY_TOO_LARGE = "query_too_large"
BELOW_MIN_BATCH_SIZE = "below_min_batch_size"
NOT_DISCOVERABLE = "not_discoverable"
# The server itself (retryable but for internal_error).
NOT_READY = "not_ready"
UNAVAILABLE = "unavailable"
INSUFFICIENT_STORAGE = "insufficient_storage"
INTERNAL_ERROR = "internal_error"
SPOOL_FULL = "spool_full"  # a shuffler's
UPSTREAM_UNAVAILABLE = "upstream_unavailable"  # a shuffler's: the collector does not answer
PROBLEM_CODES = (
    BAD_REQUEST,
    METHOD_NOT_ALLOWED,
    NOT_FOUND,
    HTTP_ERROR,
    REQUEST_TIMEOUT,
    INCOMPLETE_BODY,
    BODY_TOO_LARGE,
    UNSUPPORTED_MEDIA_TYPE,
    INVALID_GZIP,
    INVALID_JSON,
    UNSUPPORTED_PROTOCOL,
    UNAUTHORIZED,
    FORBIDDEN,
    TOO_MANY_REQUESTS,
    UNKNOWN_TASK,
    INVALID_TASK,
    TASK_EXISTS,
    INVALID_BATCH,
    TOO_MANY_REPORTS,
    INVALID_QUERY,
    QUERY_TOO_LARGE,
    BELOW_MIN_BATCH_SIZE,
    NOT_DISCOVERABLE,
    NOT_READY,
    UNAVAILABLE,
    INSUFFICIENT_STORAGE,
    INTERNAL_ERROR,
    SPOOL_FULL,
    UPSTREAM_UNAVAILABLE,
)


@dataclass(frozen=True)
class Doc:
    """A field's description, for the schema derived from the type that holds it."""

    text: str


@dataclass(frozen=True)
class OneOf:
    """The only values a field takes (an ``enum`` in the derived schema)."""

    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Rejection:
    """Why one report of a batch was refused (sent as a :class:`RejectedReport`)."""

    report_id: str | None
    reason: str
    message: str
    # The report's time bucket when it was readable: the collector counts implausible
    # reports per bucket (:mod:`ldp_telemetry.shared.mechanisms.poisoning`). Never sent back.
    bucket: int | None = field(default=None, compare=False, repr=False)


class RejectedReport(TypedDict):
    """One report of a batch that was not counted, and why."""

    report_id: Annotated[str | None, Doc("the report's id as sent (null: it had none)")]
    reason: Annotated[str, Doc("a stable code a client acts on"), OneOf(REJECTION_REASONS)]
    message: Annotated[str, Doc("what was wrong, for people")]


class UploadAnswer(TypedDict):
    """The answer to an upload, sent after the commit (202 from a shuffler: spooled)."""

    accepted: Annotated[int, Doc("reports counted now")]
    rejected: list[RejectedReport]


class _ProblemFields(TypedDict):
    type: Annotated[
        str,
        Doc("a stable URN: " + PROBLEM_TYPE + "<code>"),
        OneOf(tuple(PROBLEM_TYPE + code for code in PROBLEM_CODES)),
    ]
    title: str
    status: Annotated[int, Doc("the HTTP status")]
    detail: Annotated[str, Doc("what to fix")]


class Problem(_ProblemFields, total=False):
    """A problem document (RFC 9457): what went wrong and what to do about it."""

    limit: Annotated[int, Doc("the bound exceeded (body, reports, query)")]
    supported: Annotated[list[str], Doc("the protocol versions spoken here")]
    retry_after: Annotated[int, Doc("seconds to wait (as Retry-After)")]
    n: Annotated[int, Doc("the reports in the range asked for")]
    min_batch_size: Annotated[int, Doc("the reports an answer needs")]
    task_id: Annotated[str, Doc("the task asked for")]


def fill(path: str, **parameters: str) -> str:
    """Return a path template with its parameters in place (as given: quote them first
    where an id may hold characters a URL path cannot)."""
    return path.format(**parameters)


def rule(path: str) -> str:
    """Return a path template as a route rule (``{task_id}`` -> ``<task_id>``)."""
    return re.sub(r"\{(\w+)\}", r"<\1>", path)


def pattern(path: str) -> re.Pattern[str]:
    """Return a regular expression a request path fully matches when it is ``path`` filled
    in; a parameter (a named group) matches what a route rule's does: no slash."""
    parts = re.split(r"\{(\w+)\}", path)  # literal, name, literal, name, ..., literal
    return re.compile(
        "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>[^/]+)" for i, p in enumerate(parts))
    )


def task_path(task_id: str) -> str:
    """Return the path a task's configuration is fetched from."""
    return fill(TASK_PATH, task_id=task_id)


def upload_path(task_id: str) -> str:
    """Return the path a batch of ``task_id`` is uploaded to."""
    return fill(UPLOAD_PATH, task_id=task_id)


def upload_answer(accepted: int, rejected: Sequence[Rejection]) -> UploadAnswer:
    """Return the body of a 200 answer to an upload."""
    return {
        "accepted": accepted,
        "rejected": [
            {"report_id": r.report_id, "reason": r.reason, "message": r.message} for r in rejected
        ],
    }


def problem_title(code: str) -> str:
    """Return the problem title of a code (``body_too_large`` -> ``Body too large``)."""
    return code.replace("_", " ").capitalize()


def problem(
    status: int, code: str, detail: str, title: str | None = None, **extra: Any
) -> dict[str, Any]:
    """Return a problem document (RFC 9457) with a stable ``type``; ``extra`` fields are
    among :class:`Problem`'s."""
    document: Problem = {
        "type": PROBLEM_TYPE + code,
        "title": title or problem_title(code),
        "status": status,
        "detail": detail,
    }
    return {**document, **extra}


def problem_code(body: Any) -> str:
    """Return the code of a problem document's ``type`` ('' if it is not one)."""
    kind = body.get("type") if isinstance(body, dict) else None
    return kind.removeprefix(PROBLEM_TYPE) if isinstance(kind, str) else ""


def speaks(version: str) -> bool:
    """Return True if an upload's ``LDP-Protocol`` names a version this code speaks."""
    major, _, minor = version.strip().partition(".")
    return major == PROTOCOL_VERSION.partition(".")[0] and minor.isdigit()


def task_etag(fingerprint: str) -> str:
    """Return the ETag a task is served with (its fingerprint, quoted: a strong tag)."""
    return f'"{fingerprint}"'
