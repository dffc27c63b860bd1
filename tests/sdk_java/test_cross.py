"""The Java SDK against the reference implementation, bit for bit, from one device secret.

The fixture is tests/sdk_js/test_cross.py's (so Python, TypeScript and Java check the same
cases): tasks of every kind (longitudinal ones with ``flip`` and with ``epsilon_1``, sealed
ones), a device secret kept as the Python SDK keeps it (``device.key``), and per value its
memo key, its whole report drawn from a fixed HMAC-DRBG stream, its sealed plaintext's
padded length and (longitudinal) the device's permanent response.
sdk-java/src/test/java/dev/ldptelemetry/CrossDriver.java must reproduce every byte.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ldp_telemetry.client.budget import load_secret
from tests.sdk_java.helpers import CLASSPATH
from tests.sdk_js.test_cross import PERIOD, STREAM_SEED, TASKS, case

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("java_sdk")]


def test_java_sdk_matches_the_reference(tmp_path: Path) -> None:
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
    done = subprocess.run(
        ["java", "-cp", CLASSPATH, "dev.ldptelemetry.CrossDriver", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert json.loads(done.stdout) == {"cases": len(TASKS), "failures": []}
