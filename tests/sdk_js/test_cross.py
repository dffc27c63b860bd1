"""The TypeScript SDK against the reference implementation, bit for bit.

Python writes a fixture: tasks of every kind (longitudinal ones with ``flip`` and with
``epsilon_1``, sealed ones), a device secret kept in a data_dir exactly as the Python SDK keeps it
(``device.key``), and per value its memo key, its whole report drawn from a fixed HMAC-DRBG
stream, its sealed plaintext's padded length (PROTOCOL.md §10), and (longitudinal) the
device's permanent response. sdk-js/test/python/cross.ts reads
the same device.key and must reproduce every byte: one device secret, the same permanent
responses in both SDKs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from ldp_telemetry.client.budget import canonical_value, device_key, load_secret, lookup_key
from ldp_telemetry.shared.mechanisms.longitudinal import Longitudinal
from ldp_telemetry.shared.randomness import KeyedStream
from ldp_telemetry.shared.sealing import SealKey, padded_length
from ldp_telemetry.shared.task import TaskConfig
from tests.sdk_js.helpers import run

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("sdk")]
STREAM_SEED = bytes(range(40))
PERIOD = 1764028800
SKETCH = {"k": 50, "m": 100, "hash_seed": 3651556171}
HCMS = {"k": 50, "m": 128, "hash_seed": 12345}
FRUIT = ["apple", "banana", "cherry", "durian"]
COLOURS = [*FRUIT, "rot", "grün", "blau", "gelb", "lila", "weiß"]  # ss: ω = 3 at ε = 1
TASKS: list[dict[str, Any]] = [
    {"mechanism": "rr", "epsilon": 1.5},
    {"mechanism": "rr", "alpha": 0.3, "beta": 0.7},
    {"mechanism": "rr", "longitudinal": {"epsilon_inf": 3.0, "epsilon_1": 1.0}},
    {"mechanism": "grr", "epsilon": 2.0, "domain": FRUIT},
    {"mechanism": "grr", "domain": FRUIT, "longitudinal": {"epsilon_inf": 4.0, "flip": 0.1}},
    {"mechanism": "grr", "domain": FRUIT, "longitudinal": {"epsilon_inf": 4.0, "epsilon_1": 2.5}},
    {"mechanism": "cms", "epsilon": 4.0, **SKETCH},
    {"mechanism": "cms", "longitudinal": {"epsilon_inf": 4.0, "flip": 0.1}, **SKETCH},
    {"mechanism": "cms", "longitudinal": {"epsilon_inf": 6.0, "epsilon_1": 2.0}, **SKETCH},
    {"mechanism": "hcms", "epsilon": 3.0, **HCMS},
    {"mechanism": "hcms", "longitudinal": {"epsilon_inf": 4.0, "flip": 0.2}, **HCMS},
    {"mechanism": "olh", "epsilon": 2.5, "k": 40, "hash_seed": 99},
    {"mechanism": "oue", "epsilon": 2.0, "domain": COLOURS},
    {"mechanism": "ss", "epsilon": 1.0, "domain": COLOURS},
    {"mechanism": "hh", "epsilon": 4.0, "alphabet": "bytes", "max_length": 7, **SKETCH},
    {
        "mechanism": "hh",
        "epsilon": 4.0,
        "alphabet": "abcdé",
        "max_length": 5,
        "first": 1,
        "step": 3,
        **SKETCH,
    },
    {"mechanism": "numeric", "epsilon": 2.0, "lo": 0, "hi": 250, "buckets": 64},
    {"mechanism": "numeric", "epsilon": 1.0, "lo": 1, "hi": 1e-05 + 10_000, "scale": "log"},
    {"mechanism": "numeric", "epsilon": 2.0, "lo": -5, "hi": 5, "buckets": 16, "method": "1bit"},
    # Sealed (PROTOCOL.md §10): `sealed` is no mechanism parameter, so the permanent
    # responses are those of the same task unsealed.
    {"mechanism": "rr", "longitudinal": {"epsilon_inf": 3.0, "epsilon_1": 1.0}, "sealed": True},
    {
        "mechanism": "cms",
        "longitudinal": {"epsilon_inf": 4.0, "flip": 0.1},
        "sealed": True,
        **SKETCH,
    },
]
SEAL = SealKey("cross-key", bytes(range(32)))
VALUES: dict[str, list[Any]] = {
    "rr": [True, False],
    "grr": FRUIT,
    "cms": ["apple", "", "naïve ☃ 𝄞", "a" * 40],
    "hcms": ["apple", "", "naïve ☃ 𝄞"],
    "olh": ["apple", "x" * 17],
    "oue": ["apple", "durian", "weiß"],
    "ss": ["apple", "durian", "weiß"],
    "hh": ["ab", "abcdé", "é", "dcba"],
    "numeric": [-3.0, 0.0, 1.5, 42.0, 249.9, 1e9],
}


def case(number: int, fields: dict[str, Any], secret: bytes) -> dict[str, Any]:
    task = TaskConfig.create(task_id=f"cross-{number}", **fields)
    key = device_key(secret, task)
    mechanism = task.mechanism_object.for_device(key)
    values = []
    for value in VALUES[task.mechanism]:
        try:
            canonical = canonical_value(task, value)
        except ValueError:
            continue
        report = mechanism.privatize(value, KeyedStream(STREAM_SEED[:32], STREAM_SEED[32:]))
        permanent = None
        if isinstance(mechanism, Longitudinal):
            permanent = mechanism.permanent.encode_payload(mechanism.permanent_response(value))
        payload = task.mechanism_object.encode_payload(
            report
        )  # a plain report's, or the sealed plaintext
        values.append(
            {
                "value": value,
                "memo_key": lookup_key(secret, task, PERIOD, canonical).hex(),
                "report": payload,
                "padded": padded_length(payload),
                "permanent": permanent,
            }
        )
    assert values
    threshold = mechanism.threshold if isinstance(mechanism, Longitudinal) else None
    served = task.to_dict()
    if task.sealed:  # the key a collector serves beside a sealed task
        served["seal"] = SEAL.to_json()
    return {
        "task": served,
        "device_key": key.hex(),
        "threshold": threshold,
        "values": values,
    }


def test_typescript_sdk_matches_the_reference(tmp_path: Path) -> None:
    data_dir = tmp_path / "device"
    data_dir.mkdir()
    secret = load_secret(data_dir)  # what the Python SDK keeps: <data_dir>/device.key
    fixture = {
        "data_dir": str(data_dir),
        "stream_seed": STREAM_SEED.hex(),
        "period": PERIOD,
        "cases": [case(i, fields, secret) for i, fields in enumerate(TASKS)],
    }
    path = tmp_path / "cross.json"
    path.write_text(json.dumps(fixture))
    done = run(
        ["node", "--test", "build/test/python/cross.js"],
        env={**os.environ, "LDP_CROSS_FIXTURE": str(path)},
    )
    assert f"# pass {len(TASKS)}" in done.stdout and "# fail 0" in done.stdout, done.stdout
