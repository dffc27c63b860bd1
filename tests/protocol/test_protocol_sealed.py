"""PROTOCOL.md §10 is enough: the independent client (written from PROTOCOL.md alone)
seals reports that a real collector opens and counts exactly."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import independent_client as ic  # noqa: E402
import independent_sealing as sealing  # noqa: E402

from tests.support.servers import ADMIN, ANALYST, bearer, start_server  # noqa: E402

DOMAIN = ["north", "south", "east", "west"]
POPULATION = ["north"] * 120 + ["south"] * 60 + ["east"] * 20


def test_the_collector_opens_the_independent_clients_sealed_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, keys = tmp_path / "sealed.sqlite3", tmp_path / "seal-keys.json"
    command = [sys.executable, "-m", "ldp_telemetry.aggregator.cli", "--db", str(db), "keys", "new"]
    subprocess.run([*command, "--keys", str(keys)], check=True, timeout=60, capture_output=True)
    monkeypatch.setenv("LDP_SEAL_KEYS", str(keys))
    server = start_server(db)
    try:
        created = requests.post(
            f"{server.url}/v1/tasks",
            headers=bearer(ADMIN),
            timeout=10,
            json={
                "task_id": "indep-sealed",
                "mechanism": "grr",
                "epsilon": 2.0,
                "domain": DOMAIN,
                "min_batch_size": 10,
                "sealed": True,
            },
        )
        assert created.status_code == 201, created.text
        task = ic.get_task(server.url, "indep-sealed")  # fingerprint: `sealed` in, `seal` out
        reports = [
            sealing.seal(task, ic.envelope(task, time.time(), ic.grr(task, v))) for v in POPULATION
        ]
        assert len({len(r["sealed"]) for r in reports}) == 1  # §10's padding: one length
        answer = ic.upload(server.url, "indep-sealed", reports)
        assert answer == {"accepted": len(POPULATION), "rejected": []}
        estimates = requests.post(
            f"{server.url}/v1/tasks/indep-sealed/estimates",
            headers=bearer(ANALYST),
            json={},
            timeout=30,
        ).json()
        assert estimates["n"] == len(POPULATION)
    finally:
        server.kill()
