"""The wire format of reports and batches (JSON, UTF-8).

A batch is ``{"reports": [report, ...]}``. Every report carries::

    report_id    16 random bytes from the CSPRNG, base64url without padding (22 chars)
    fingerprint  the task's fingerprint (a report made under other parameters is refused)
    time         Unix seconds floored to the task's time_precision

and its mechanism's payload fields, which the mechanism encodes and decodes itself
(``payload_fields``, ``encode_payload`` and ``decode_payload``, see
:mod:`ldp_telemetry.shared.mechanisms`; PROTOCOL.md lists them). A report of a task that
declares dimensions also carries ``dims``, its slice's values in the clear (an
:class:`Envelope` holds the slice's index; :mod:`ldp_telemetry.shared.dimensions`). A sealed
task's reports carry ``key_id`` and ``sealed`` instead of the payload fields
(:mod:`ldp_telemetry.shared.sealing`); ``dims`` stays in the clear.
Decoding checks every field and raises :class:`DecodeError` whose ``reason`` is a stable code and
whose message says what was wrong.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from ldp_telemetry.shared.contract import (
    DIMENSION_UNDECLARED,
    OUTDATED_CONFIG,
    REPLAYED_MESSAGE,
    REPORT_REPLAYED,
    Rejection,
)
from ldp_telemetry.shared.errors import DecodeError, ParameterError
from ldp_telemetry.shared.sealing import SEALED_FIELDS, open_report, seal_report
from ldp_telemetry.shared.task import TaskConfig
from ldp_telemetry.shared.wire import b64decode, b64encode, integer, try_b64decode

__all__ = [
    "REPORT_ID_BYTES",
    "Envelope",
    "Rejection",
    "b64decode",
    "b64encode",
    "batch_body",
    "decode_batch",
    "decode_report",
    "encode_batch",
    "encode_report",
    "encode_report_text",
    "new_report_id",
    "open_sealed",
    "replays",
]

REPORT_ID_BYTES = 16
Payload = Any  # a mechanism's report (see ldp_telemetry.shared.mechanisms)
_COMMON = ("report_id", "fingerprint", "time")


@dataclass(frozen=True, slots=True)
class Envelope:
    """A privatized report with its id, task fingerprint, floored time and slice index
    (0 for a task without dimensions)."""

    report_id: bytes
    fingerprint: str
    time: int
    payload: Payload
    slice: int = 0


def replays(report_ids: Iterable[bytes]) -> list[Rejection]:
    """Return the rejections of reports whose ids were counted before."""
    return [Rejection(b64encode(i), REPORT_REPLAYED, REPLAYED_MESSAGE) for i in report_ids]


def new_report_id() -> bytes:
    """Return a fresh random report id from the OS CSPRNG."""
    return os.urandom(REPORT_ID_BYTES)


def encode_report(task: TaskConfig, envelope: Envelope) -> dict[str, Any]:
    """Return the JSON object of one report."""
    # int(): numpy integers taken from a batch's arrays are not JSON serializable
    out: dict[str, Any] = {
        "report_id": b64encode(envelope.report_id),
        "fingerprint": envelope.fingerprint,
        "time": int(envelope.time),
    }
    if task.dimensions is not None:  # public: beside the payload, never sealed
        out["dims"] = task.dimensions.values_of(int(envelope.slice))
    out.update(task.mechanism_object.encode_payload(envelope.payload))
    if task.sealed:  # the payload leaves the device encrypted to the collector's key
        if task.seal is None:
            raise ParameterError(f"task {task.task_id!r} is sealed but names no seal key")
        return seal_report(task.task_id, task.seal, out)
    return out


def encode_report_text(task: TaskConfig, envelope: Envelope) -> str:
    """Return one report as compact JSON text (what a device queues and resends as is)."""
    return json.dumps(encode_report(task, envelope), separators=(",", ":"))


def batch_body(report_texts: Iterable[str]) -> bytes:
    """Return the UTF-8 body of a batch of reports already encoded as JSON text.

    The one place a batch is framed: ``encode_batch`` and the SDK's uploader (which keeps
    reports as text, so that a resend is byte for byte the same) both use it.
    """
    return ('{"reports":[' + ",".join(report_texts) + "]}").encode()


def encode_batch(task: TaskConfig, envelopes: Iterable[Envelope]) -> bytes:
    """Return the UTF-8 JSON body of a batch."""
    return batch_body(encode_report_text(task, e) for e in envelopes)


def decode_report(task: TaskConfig, obj: Any) -> Envelope:
    """Return the report a JSON object holds, or raise DecodeError with the reason."""
    if not isinstance(obj, dict):
        raise DecodeError("a report must be a JSON object")
    _check_dims_present(task, obj)
    expected, present = _expected_fields(task), obj.keys()
    if present != expected:
        missing, extra = expected - present, present - expected
        raise DecodeError(
            f"report fields do not match the task's mechanism {task.mechanism}: "
            f"missing {sorted(missing)}, unexpected {sorted(extra)}"
        )
    report_id = b64decode(obj["report_id"], REPORT_ID_BYTES, "report_id")
    if not isinstance(obj["fingerprint"], str):  # malformed, not merely outdated
        raise DecodeError("fingerprint must be a string")
    if obj["fingerprint"] != task.fingerprint:
        raise DecodeError(
            "the report was made with another version of this task; fetch the task again",
            reason=OUTDATED_CONFIG,
        )
    time = integer(obj, "time", 0, 2**62)
    if time % task.time_precision:
        raise DecodeError(
            f"time must be floored to the task's time_precision ({task.time_precision} s)"
        )
    slice_index = _slice_of(task, obj)
    try:
        payload = task.mechanism_object.decode_payload(obj)
    except DecodeError as error:
        error.time = time  # the report's bucket is known: its refusal can be counted there
        raise
    return Envelope(report_id, task.fingerprint, time, payload, slice_index)


def decode_batch(
    task: TaskConfig, body: Any, keys: Mapping[str, X25519PrivateKey] | None = None
) -> tuple[list[Envelope], list[Rejection]]:
    """Return the valid reports of a parsed JSON batch and a rejection per invalid one.

    A sealed task's reports are opened first with ``keys`` (key id → the collector's
    private key; see :func:`open_sealed`). Raises DecodeError if the batch itself is
    malformed (not an object, no report list, empty).
    """
    if not isinstance(body, dict) or not isinstance(body.get("reports"), list):
        raise DecodeError('a batch must be a JSON object {"reports": [...]}')
    if set(body) != {"reports"}:
        raise DecodeError(f"unexpected batch fields: {sorted(set(body) - {'reports'})}")
    if not body["reports"]:
        raise DecodeError("a batch must hold at least one report")
    accepted, rejected = [], []
    expected = _expected_fields(task)
    for obj in body["reports"]:
        try:
            plain = open_sealed(task, obj, keys or {})
            accepted.append(_plain_report(task, plain, expected) or decode_report(task, plain))
        except DecodeError as error:
            rejected.append(Rejection(_report_id_of(obj), error.reason, str(error), error.time))
    return accepted, rejected


def open_sealed(task: TaskConfig, obj: Any, keys: Mapping[str, X25519PrivateKey]) -> Any:
    """Return a sealed task's report opened (a plain task's as it is), or raise DecodeError."""
    if not task.sealed:
        return obj
    if isinstance(obj, dict):
        _check_dims_present(task, obj)
    expected = _with_common(SEALED_FIELDS, task.dimensions is not None)
    if not isinstance(obj, dict) or obj.keys() != expected:
        raise DecodeError(
            f"task {task.task_id!r} takes sealed reports only: fields "
            f"{sorted(expected)} (PROTOCOL.md §10)"
        )
    _slice_of(task, obj)  # a slice's reason before the seal's: dims are checked in the clear
    return open_report(task.task_id, obj, keys)


def _plain_report(task: TaskConfig, obj: Any, expected: frozenset[str]) -> Envelope | None:
    """Return a report whose common fields are plainly valid, else None (then
    ``decode_report`` says what is wrong).

    The same checks as ``decode_report``, without its messages: a device's report passes
    them in one go (measured in ``benchmarks/serving/decode.py``). The payload is the
    mechanism's, decoded as always; a DecodeError it raises is the same either way.
    """
    if type(obj) is not dict or obj.keys() != expected:
        return None
    time = obj["time"]
    if type(time) is not int or not 0 <= time <= 2**62 or time % task.time_precision:
        return None
    if obj["fingerprint"] != task.fingerprint:
        return None
    report_id = try_b64decode(obj["report_id"], REPORT_ID_BYTES)
    if report_id is None:
        return None
    slice_index = _slice_of(task, obj)
    try:
        payload = task.mechanism_object.decode_payload(obj)
    except DecodeError as error:
        error.time = time  # the report's bucket is known: its refusal can be counted there
        raise
    return Envelope(report_id, task.fingerprint, time, payload, slice_index)


def _check_dims_present(task: TaskConfig, obj: dict[str, Any]) -> None:
    """Raise the reason of a report whose ``dims`` are there and should not be, or not."""
    if task.dimensions is None and "dims" in obj:
        raise DecodeError(
            f"task {task.task_id!r} declares no dimensions: its reports carry no dims",
            reason=DIMENSION_UNDECLARED,
        )
    if task.dimensions is not None and "dims" not in obj:
        task.dimensions.slice_of_report(None)  # raises dimensions_missing


def _slice_of(task: TaskConfig, obj: dict[str, Any]) -> int:
    """Return the slice a report's ``dims`` name (0 without dimensions), or raise its reason."""
    return 0 if task.dimensions is None else task.dimensions.slice_of_report(obj["dims"])


def _expected_fields(task: TaskConfig) -> frozenset[str]:
    """Return the JSON fields a report of this task holds."""
    return _with_common(task.mechanism_object.payload_fields, task.dimensions is not None)


@functools.lru_cache(maxsize=64)
def _with_common(payload_fields: tuple[str, ...], dims: bool = False) -> frozenset[str]:
    # built once per mechanism kind
    return frozenset(_COMMON + (("dims",) if dims else ()) + payload_fields)


def _report_id_of(obj: Any) -> str | None:
    report_id = obj.get("report_id") if isinstance(obj, dict) else None
    return report_id if isinstance(report_id, str) and len(report_id) <= 64 else None
