"""Write protocol/vectors.json: Protocol 1.1's conformance vectors, from this implementation.

``python -m protocol.generate`` prints them; ``--write`` writes the file (refused when it
exists and differs, unless ``--force``: a change there is a protocol change). The vectors
are part of the protocol (PROTOCOL.md §8): an SDK that does not reproduce every one of
them is wrong. 64-bit numbers are lowercase hexadecimal strings (JSON numbers are doubles).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ldp_telemetry.client.budget import device_key, lookup_key
from ldp_telemetry.shared import Envelope, TaskConfig, encode_batch
from ldp_telemetry.shared.contract import PROTOCOL_VERSION_1_1
from ldp_telemetry.shared.hashing import RowHashes, splitmix64, value_key
from ldp_telemetry.shared.mechanisms.lifetime.loloha import LocalHashingLongitudinal
from ldp_telemetry.shared.mechanisms.longitudinal import Longitudinal
from ldp_telemetry.shared.sealing import info, padded, padded_length
from ldp_telemetry.shared.wire import b64encode, canonical_json
from protocol import cases
from protocol.words import FixedWords, RecordingStream

FILE = Path(__file__).with_name("vectors.json")
SECRET = bytes(range(32))  # the device secret of every device vector
REPORT_ID = bytes(range(16))
TIME = 1764028800  # every report's floored time, and the memo key's period
SEED = cases.SEED
# The protocol the file belongs to: the newest (its 1.0 vectors are unchanged in it).
VERSION = PROTOCOL_VERSION_1_1
# A sealed task's vector is served with §10's opening-vector key (not fingerprinted).
VECTOR_SEAL: dict[str, Any] = {
    "kem": 32,
    "kdf": 1,
    "aead": 3,
    "key_id": "vector-key-1",
    "public_key": "j0DFrbaPJWJK5bIU6nZ6bslNgp09e14a0bpvPiE4KF8",
}


def build() -> dict[str, Any]:
    """Return every vector as JSON-ready data."""
    tasks = [_task(name, spec) for name, spec in cases.TASKS.items()]
    return {
        "protocol": VERSION,
        "generated_by": "python -m protocol.generate --write",
        "device_secret": SECRET.hex(),
        "report_id": REPORT_ID.hex(),
        "time": TIME,
        "canonical_json": [
            {"json": text, "canonical": canonical_json(json.loads(text))}
            for text in cases.CANONICAL_JSON
        ],
        "splitmix64": {"seed": SEED, "words": [f"{w:016x}" for w in splitmix64(SEED, 8)]},
        "row_constants": _row_constants(),
        "keys": [
            {
                "value": v,
                "utf8": v.encode().hex(),
                "seed": SEED,
                "key": f"{value_key(v, SEED):016x}",
            }
            for v in cases.VALUES
        ],
        "buckets": [
            {"value": v, "seed": SEED, "m": m, "rows": _rows(v, SEED, 4, m)}
            for m in (2, 20, 1000, 1024, 65536)
            for v in cases.VALUES
        ],
        "drbg": [_drbg(entropy, nonce, sizes) for entropy, nonce, sizes in cases.DRBG],
        "tasks": tasks,
        "padding": [_padding(name, tasks) for name in cases.PADDING_TASKS],
    }


def _key(value: str) -> str:
    return f"{value_key(value, SEED):016x}"


def _row_constants() -> dict[str, Any]:
    family = RowHashes(SEED, 4, 1000)
    return {
        "seed": SEED,
        "k": 4,
        "a": [f"{int(a):016x}" for a in family.a],
        "b": [f"{int(b):016x}" for b in family.b],
    }


def _rows(value: str, seed: int, k: int, m: int) -> list[int]:
    hashes, key = RowHashes(seed, k, m), value_key(value, seed)
    return [hashes.bucket(key, j) for j in range(k)]


def _drbg(entropy: bytes, nonce: bytes, sizes: list[int]) -> dict[str, Any]:
    stream = RecordingStream(entropy, nonce)
    for size in sizes:
        stream.bytes(size)
    return {
        "seed_material": (entropy + nonce).hex(),
        "calls": [{"bytes": size, "output": out.hex()} for size, out in stream.calls],
    }


def _task(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    spec = dict(spec)
    values, words = spec.pop("values"), spec.pop("words")
    given = spec.pop("dimension_values", [None] * len(values))
    task = TaskConfig(task_id=name, **spec)
    key = device_key(SECRET, task)
    mechanism = task.mechanism_object
    served = {**task.to_dict(), "upload_key_required": False, "archive": False}
    if task.sealed:
        served["seal"] = VECTOR_SEAL
    return {
        "task": served,
        "canonical": task.canonical_form(),
        "fingerprint": task.fingerprint,
        "derived": task.derived,
        "device_key": key.hex(),
        "reports": [
            _report(task, key, value, words[i % len(words)], given[i])
            for i, value in enumerate(values)
        ],
        **({"hash_family": _hash_family(task)} if _hashes(task) else {}),
        **({"prr": _prr(task, key, values[0])} if isinstance(mechanism, Longitudinal) else {}),
    }


def _hashes(task: TaskConfig) -> bool:
    """Return whether the task hashes values (a sketch's hash_seed, or LOLOHA's)."""
    fields = task.params.to_fields()
    return "hash_seed" in fields or isinstance(task.mechanism_object, LocalHashingLongitudinal)


def _hash_family(task: TaskConfig) -> dict[str, Any]:
    """Return the keys and row buckets of the task's values under its own hash family."""
    mechanism: Any = task.mechanism_object
    sketch = getattr(mechanism, "permanent", mechanism)
    if not hasattr(sketch, "hashes"):  # hh: each level's family is in its report vectors
        return {"level_seeds": task.derived["level_seeds"]}
    return {
        "k": sketch.k,
        "m": sketch.m,
        "a": [f"{int(a):016x}" for a in sketch.hashes.a],
        "b": [f"{int(b):016x}" for b in sketch.hashes.b],
    }


def _report(
    task: TaskConfig, key: bytes, value: Any, words: list[int], given: dict[str, str] | None
) -> dict[str, Any]:
    """Return one device vector: a value (and the app's dimension values) and fixed words
    in, the exact report out."""
    device = task.mechanism_object.for_device(key)
    canonical = device.canonical(value)
    source = FixedWords(words)
    report = device.privatize(value, source)
    payload = device.encode_payload(report)
    hashing = cases.hashing_of(device, value)
    clear: dict[str, Any] = {}
    if task.dimensions is not None:  # §11: mapped to the lists, then the slice they name
        dims = task.dimensions.coarsen(given)
        clear = {"dimensions": given, "dims": dims, "slice": task.dimensions.slice_of(dims)}
    if task.sealed:  # sealing is randomized: the vector is the padded plaintext (§10)
        body = {"plaintext": padded(payload).decode("utf-8")}
        if task.dimensions is not None:  # and the info that binds the clear dims
            bound = info(
                task.task_id,
                task.fingerprint,
                VECTOR_SEAL["key_id"],
                b64encode(REPORT_ID),
                TIME,
                clear["dims"],
            )
            body["info"] = bound.decode("utf-8")
    else:
        envelope = Envelope(REPORT_ID, task.fingerprint, TIME, report, clear.get("slice", 0))
        body = {"wire": encode_batch(task, [envelope]).decode("utf-8")}
    return {
        "value": value,
        **clear,
        "canonical": canonical.hex(),
        "memo_key": lookup_key(SECRET, task, TIME, canonical, clear.get("slice", 0)).hex(),
        **hashing,
        "words": words,
        "words_used": source.used,
        "report": payload,
        **cases.payload_detail(payload, hashing, task.params.to_fields().get("m")),
        **body,
    }


def _padding(name: str, tasks: list[dict[str, Any]]) -> dict[str, Any]:
    """Return §10's padded plaintext of the first report of the task named ``name``."""
    payload = next(t for t in tasks if t["task"]["task_id"] == name)["reports"][0]["report"]
    return {
        "task": name,
        "payload": payload,
        "padded_length": padded_length(payload),
        "plaintext": padded(payload).decode("utf-8"),
    }


def _prr(task: TaskConfig, key: bytes, value: Any) -> dict[str, Any]:
    """Return the permanent response of a value: its DRBG seed material, calls and report."""
    mechanism = task.mechanism_object
    assert isinstance(mechanism, Longitudinal)
    if isinstance(mechanism, LocalHashingLongitudinal):
        return _loloha_prr(task, key, value)
    identity = canonical_json(task.params.to_fields())
    context = b"ldp-telemetry permanent response\x00" + identity.encode() + b"\x00"
    context += mechanism.canonical(value)
    stream = RecordingStream(key, context)
    permanent = mechanism.permanent.privatize(value, stream)
    expected = mechanism.for_device(key).permanent_response(value)
    assert permanent == expected, "the vector's PRR is not the implementation's"
    return {
        "value": value,
        "F": identity,
        "seed_material": (key + context).hex(),
        "calls": [{"bytes": size, "output": out.hex()} for size, out in stream.calls],
        "permanent_response": mechanism.encode_payload(permanent),
    }


def _loloha_prr(task: TaskConfig, key: bytes, value: Any) -> dict[str, Any]:
    """Return a LOLOHA device's row and the permanent response of a value's bucket (§3.13)."""
    mechanism = task.mechanism_object
    assert isinstance(mechanism, LocalHashingLongitudinal)
    device = mechanism.for_device(key)
    assert isinstance(device, LocalHashingLongitudinal)
    identity = canonical_json(task.params.to_fields())
    row_context = b"ldp-telemetry hash row\x00" + identity.encode()
    row_stream = RecordingStream(key, row_context)
    row = int(row_stream.below(mechanism.seeds, 1)[0])
    bucket = device.bucket(value)
    context = b"ldp-telemetry permanent response\x00" + identity.encode() + b"\x00"
    context += bucket.to_bytes(4, "big")
    stream = RecordingStream(key, context)
    word = int(stream.words(1)[0])
    permanent = device.permanent_response(value)
    assert row == device.row() == permanent.row, "the vector's row is not the implementation's"
    return {
        "value": value,
        "F": identity,
        "row": {
            "seed_material": (key + row_context).hex(),
            "calls": [{"bytes": size, "output": out.hex()} for size, out in row_stream.calls],
            "row": row,
        },
        "bucket": bucket,
        "seed_material": (key + context).hex(),
        "calls": [{"bytes": size, "output": out.hex()} for size, out in stream.calls],
        "word": word,
        "permanent_response": mechanism.encode_payload(permanent),
    }


def text() -> str:
    """Return the file's text (what ``--write`` writes)."""
    return json.dumps(build(), indent=1, ensure_ascii=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help="write protocol/vectors.json")
    parser.add_argument("--force", action="store_true", help="overwrite a different file")
    args = parser.parse_args()
    new = text()
    if not args.write:
        print(new, end="")
        return 0
    if FILE.exists() and FILE.read_text(encoding="utf-8") != new and not args.force:
        print(f"{FILE} differs: that changes the protocol; add --force", file=sys.stderr)
        return 1
    FILE.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
