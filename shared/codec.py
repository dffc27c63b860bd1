"""The wire format of reports and batches (JSON, UTF-8).

A batch is ``{"reports": [report, ...]}``. Every report carries::

    report_id    16 random bytes from the CSPRNG, base64url without padding (22 chars)
    fingerprint  the task's fingerprint (a report made under other parameters is refused)
    time         Unix seconds floored to the task's time_precision

and its mechanism's payload: ``bit`` (rr), ``index`` (grr), ``row`` + ``bits`` (cms: the
m bits packed, base64url without padding, zero padding bits), ``row`` + ``col`` + ``bit``
(hcms). Decoding checks every field and raises :class:`DecodeError` whose ``reason`` is a
stable code and whose message says what was wrong.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from shared.cms import SketchReport
from shared.errors import DecodeError
from shared.hcms import HadamardReport
from shared.task import TaskConfig

REPORT_ID_BYTES = 16
Payload = int | SketchReport | HadamardReport
_COMMON = ("report_id", "fingerprint", "time")
_FIELDS = {
    "rr": ("bit",), "grr": ("index",), "cms": ("row", "bits"), "hcms": ("row", "col", "bit"),
}
_EXPECTED = {mechanism: frozenset(_COMMON + fields) for mechanism, fields in _FIELDS.items()}


@dataclass(frozen=True, slots=True)
class Envelope:
    """A privatized report with its id, task fingerprint and floored time."""

    report_id: bytes
    fingerprint: str
    time: int
    payload: Payload


@dataclass(frozen=True, slots=True)
class Rejection:
    """Why one report of a batch was refused."""

    report_id: str | None
    reason: str
    message: str


def new_report_id() -> bytes:
    """Return a fresh random report id from the OS CSPRNG."""
    return os.urandom(REPORT_ID_BYTES)


def b64encode(raw: bytes) -> str:
    """Return base64url without padding."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def b64decode(text: str, size: int, what: str) -> bytes:
    """Return the ``size`` bytes a base64url string (no padding) holds, or raise."""
    if not isinstance(text, str) or len(text) != (4 * size + 2) // 3:
        raise DecodeError(f"{what} must be {size} bytes as base64url without padding")
    if not _BASE64URL.fullmatch(text):
        raise DecodeError(f"{what} is not valid base64url (alphabet A-Z a-z 0-9 - _)")
    if text[-1] not in _canonical_last_characters(size):
        raise DecodeError(f"{what} must be {size} bytes as canonical base64url: the unused "
                          "low bits of the last character must be zero")
    # Checked up front, the decoding itself is one C call (this runs per report on ingest).
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
_BASE64URL = re.compile("[A-Za-z0-9_-]+")


@functools.lru_cache(maxsize=64)
def _canonical_last_characters(size: int) -> frozenset[str]:
    """Return the characters that may end the canonical encoding of ``size`` bytes."""
    unused = -8 * size % 6  # low bits of the last character that carry nothing
    return frozenset(_ALPHABET[::1 << unused])


def encode_report(task: TaskConfig, envelope: Envelope) -> dict[str, Any]:
    """Return the JSON object of one report."""
    # int(): numpy integers taken from a batch's arrays are not JSON serializable
    out: dict[str, Any] = {"report_id": b64encode(envelope.report_id),
                           "fingerprint": envelope.fingerprint, "time": int(envelope.time)}
    payload = envelope.payload
    if isinstance(payload, SketchReport):
        out.update(row=int(payload.row), bits=b64encode(payload.bits))
    elif isinstance(payload, HadamardReport):
        out.update(row=int(payload.row), col=int(payload.col), bit=int(payload.bit))
    else:
        out["bit" if task.mechanism == "rr" else "index"] = int(payload)
    return out


def encode_batch(task: TaskConfig, envelopes: Iterable[Envelope]) -> bytes:
    """Return the UTF-8 JSON body of a batch."""
    reports = [encode_report(task, e) for e in envelopes]
    return json.dumps({"reports": reports}, separators=(",", ":")).encode()


def decode_report(task: TaskConfig, obj: Any) -> Envelope:
    """Return the report a JSON object holds, or raise DecodeError with the reason."""
    if not isinstance(obj, dict):
        raise DecodeError("a report must be a JSON object")
    expected, present = _EXPECTED[task.mechanism], obj.keys()  # built once per mechanism
    if present != expected:
        missing, extra = expected - present, present - expected
        raise DecodeError(f"report fields do not match the task's mechanism {task.mechanism}: "
                          f"missing {sorted(missing)}, unexpected {sorted(extra)}")
    report_id = b64decode(obj["report_id"], REPORT_ID_BYTES, "report_id")
    if not isinstance(obj["fingerprint"], str):  # malformed, not merely outdated
        raise DecodeError("fingerprint must be a string")
    if obj["fingerprint"] != task.fingerprint:
        raise DecodeError("the report was made with another version of this task; fetch "
                          "the task again", reason="outdated_config")
    time = _integer(obj, "time", 0, 2**62)
    if time % task.time_precision:
        raise DecodeError(f"time must be floored to the task's time_precision "
                          f"({task.time_precision} s)")
    return Envelope(report_id, task.fingerprint, time, _payload(task, obj))


def decode_batch(task: TaskConfig, body: Any) -> tuple[list[Envelope], list[Rejection]]:
    """Return the valid reports of a parsed JSON batch and a rejection per invalid one.

    Raises DecodeError if the batch itself is malformed (not an object, no report list,
    empty).
    """
    if not isinstance(body, dict) or not isinstance(body.get("reports"), list):
        raise DecodeError('a batch must be a JSON object {"reports": [...]}')
    if set(body) != {"reports"}:
        raise DecodeError(f"unexpected batch fields: {sorted(set(body) - {'reports'})}")
    if not body["reports"]:
        raise DecodeError("a batch must hold at least one report")
    accepted, rejected = [], []
    for obj in body["reports"]:
        try:
            accepted.append(decode_report(task, obj))
        except DecodeError as error:
            rejected.append(Rejection(_report_id_of(obj), error.reason, str(error)))
    return accepted, rejected


def _payload(task: TaskConfig, obj: dict[str, Any]) -> Payload:
    mechanism = task.mechanism_object
    if task.mechanism == "rr":
        return _integer(obj, "bit", 0, 1)
    if task.mechanism == "grr":
        return _integer(obj, "index", 0, mechanism.d - 1)  # type: ignore[union-attr]
    row = _integer(obj, "row", 0, task.k - 1)  # type: ignore[operator]
    if task.mechanism == "hcms":
        return HadamardReport(row, _integer(obj, "col", 0, task.m - 1),  # type: ignore[operator]
                              _integer(obj, "bit", 0, 1))
    m: int = task.m  # type: ignore[assignment]
    bits = b64decode(obj["bits"], (m + 7) // 8, "bits")
    if m % 8 and bits[-1] & ((1 << (8 - m % 8)) - 1):
        raise DecodeError(f"bits must hold exactly m={m} bits: the padding bits must be 0")
    return SketchReport(row, bits)


def _integer(obj: dict[str, Any], name: str, low: int, high: int) -> int:
    value = obj[name]
    if isinstance(value, bool) or not isinstance(value, int):
        raise DecodeError(f"{name} must be an integer")
    if not low <= value <= high:
        raise DecodeError(f"{name} must be in [{low}, {high}], got {value}")
    return value


def _report_id_of(obj: Any) -> str | None:
    report_id = obj.get("report_id") if isinstance(obj, dict) else None
    return report_id if isinstance(report_id, str) and len(report_id) <= 64 else None

