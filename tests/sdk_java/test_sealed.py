"""The Java SDK seals against a real collector (PROTOCOL.md §10): reports counted exactly.

The collector's key is made with ``ldp-aggregator keys new``. Each simulated device is a
client of its own (E2eDriver "devices") that fetches or is handed the sealed tasks with their
``seal`` key, records one value per task and uploads only sealed reports, sealed with the
JDK's X25519 and ChaCha20-Poly1305; the collector opens them: n is exact, and the estimates
are within 4 standard errors of the truth.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.sdk_java.helpers import run_driver
from tests.support.reports import create_task_json, estimates_json
from tests.support.servers import start_sealing_server

pytestmark = [pytest.mark.timeout(600), pytest.mark.usefixtures("java_sdk")]
DEVICES = 200
FRUIT = {"apple": 100, "banana": 60, "cherry": 40, "durian": 0}
TASKS: dict[str, dict[str, Any]] = {
    "java-sealed-grr": {"mechanism": "grr", "epsilon": 3.0, "domain": list(FRUIT)},
    "java-sealed-cms": {"mechanism": "cms", "epsilon": 4.0, "k": 64, "m": 256},
    "java-sealed-rr-long": {
        "mechanism": "rr",
        "longitudinal": {"epsilon_inf": 3.0, "epsilon_1": 2.0},
    },
    "java-sealed-sw": {"mechanism": "numeric", "epsilon": 3.0, "lo": 0, "hi": 100, "buckets": 32},
}


@pytest.fixture(scope="module")
def sealing_collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Yield the URL of a real collector holding a seal key made by the CLI."""
    server = start_sealing_server(tmp_path_factory.mktemp("sdkjava-sealed") / "collector.sqlite3")
    try:
        yield server.url
    finally:
        server.kill()


def test_sealed_reports_counted_exactly(sealing_collector: str, tmp_path: Path) -> None:
    for task_id, fields in TASKS.items():
        created = create_task_json(
            sealing_collector, task_id=task_id, min_batch_size=1, sealed=True, **fields
        )
        assert created["sealed"] is True and created["seal"]["kem"] == 32
    rng = np.random.default_rng(40)
    fruit = [value for value, count in FRUIT.items() for _ in range(count)]
    latencies = [float(x) for x in rng.uniform(10, 70, DEVICES)]
    plan = {
        "java-sealed-grr": list(rng.permutation(np.array(fruit, dtype=object))),
        "java-sealed-cms": list(rng.permutation(np.array(fruit, dtype=object))),
        "java-sealed-rr-long": [True] * 150 + [False] * 50,
        "java-sealed-sw": latencies,
    }
    stats = run_driver({"mode": "devices", "endpoint": sealing_collector, "values": plan}, tmp_path)
    assert stats == {"sent": DEVICES * len(TASKS), "queued": 0, "dropped": {}, "rejected": {}}
    for task_id in ("java-sealed-grr", "java-sealed-cms"):
        answer = estimates_json(sealing_collector, task_id, candidates=list(FRUIT))
        assert answer["n"] == DEVICES, task_id
        for row in answer["estimates"]:
            assert abs(row["estimate"] - FRUIT[row["value"]]) <= 4 * row["std_error"], (
                task_id,
                row,
            )
    answer = estimates_json(sealing_collector, "java-sealed-rr-long")
    assert answer["n"] == DEVICES
    for row in answer["estimates"]:
        truth = 150 if row["value"] is True else 50
        assert abs(row["estimate"] - truth) <= 4 * row["std_error"], row
    answer = estimates_json(sealing_collector, "java-sealed-sw", candidates=["mean"])
    assert answer["n"] == DEVICES
    row = answer["estimates"][0]
    assert abs(row["estimate"] - float(np.mean(latencies))) <= 4 * row["std_error"]
