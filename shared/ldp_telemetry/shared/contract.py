"""The collector's HTTP contract, once: what the collector, the in-memory transport and the
SDK agree on about uploads, tasks and errors (PROTOCOL.md §§1, 2, 7).

- Upload answers: ``{"accepted": n, "rejected": [{"report_id", "reason", "message"}]}``;
  a report id seen before is rejected as ``report_replayed`` (a retrying client treats it
  as delivered).
- Tasks are served with their fingerprint as a strong ETag and ``CACHE_CONTROL``.
- Errors are RFC 9457 problem documents whose ``type`` is ``PROBLEM_TYPE`` + a code.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ldp_telemetry.shared.codec import Rejection, b64encode
from ldp_telemetry.shared.errors import REPORT_REPLAYED
from ldp_telemetry.shared.task import PROTOCOL_VERSION

TASKS_PATH = "/v1/tasks"  # GET: every task; GET TASKS_PATH/{task_id}: one (PROTOCOL.md §1)
UPLOAD_PATH = TASKS_PATH + "/{task_id}/reports"  # POST a batch here (PROTOCOL.md §2)
# Uploads name the protocol version they follow (PROTOCOL.md §2); a collector refuses a
# major version it does not speak. Absent: a client from before 1.0, still accepted.
PROTOCOL_HEADER = "LDP-Protocol"
PROBLEM_TYPE = "urn:ldp-telemetry:problem:"
PROBLEM_MEDIA_TYPE = "application/problem+json"
CACHE_CONTROL = "public, max-age=60"
REPLAYED = REPORT_REPLAYED
REPLAYED_MESSAGE = (
    "this report id was already received and counted; a retrying client may treat this as success"
)


def upload_path(task_id: str) -> str:
    """Return the path a batch of ``task_id`` is uploaded to."""
    return UPLOAD_PATH.format(task_id=task_id)


def replays(report_ids: Iterable[bytes]) -> list[Rejection]:
    """Return the rejections of reports whose ids were counted before."""
    return [Rejection(b64encode(report_id), REPLAYED, REPLAYED_MESSAGE) for report_id in report_ids]


def upload_answer(accepted: int, rejected: Sequence[Rejection]) -> dict[str, Any]:
    """Return the body of a 200 answer to an upload."""
    return {
        "accepted": accepted,
        "rejected": [
            {"report_id": r.report_id, "reason": r.reason, "message": r.message} for r in rejected
        ],
    }


def problem(
    status: int, code: str, detail: str, title: str | None = None, **extra: Any
) -> dict[str, Any]:
    """Return a problem document (RFC 9457) with a stable ``type``."""
    return {
        "type": PROBLEM_TYPE + code,
        "title": title or code.replace("_", " ").capitalize(),
        "status": status,
        "detail": detail,
        **extra,
    }


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
