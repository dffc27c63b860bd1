"""End to end: simulated devices, each with its own Client, against the real aggregator.

The aggregator (``aggregator.create_app``) serves on a free 127.0.0.1 port from a thread,
on a temporary database. Every device fetches the task configurations over HTTP,
privatizes on its own, uploads on close; the analyst's intervals must hold the truth
(95% together: five intervals, each at the Bonferroni level 1 − 0.05/5).
Each device's noise is drawn from its own seeded generator so that the test is repeatable
(the SDK itself always uses the OS CSPRNG; shared's tests cover the randomizers).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import requests

from ldp_telemetry.client import Client, ClientStats, Timeouts
from ldp_telemetry.shared import CountMeanSketch, RandomizedResponse
from tests.support.collectors import make_app, served_in_thread
from tests.support.servers import ADMIN, ANALYST

pytestmark = pytest.mark.timeout(120)
DEVICES = 300
PATIENT = Timeouts(connect=10, read=30, config=10)  # the test machine may be busy
FRUIT = {"apple": 150, "banana": 90, "cherry": 60, "durian": 0}  # the truth, sums to DEVICES


@pytest.fixture
def aggregator_url(tmp_path: Path) -> Iterator[str]:
    """Yield the URL of a real aggregator on loopback; stopped after the test."""
    with served_in_thread(make_app(str(tmp_path / "e2e.sqlite3"))) as url:
        yield url


def create_task(url: str, **params: Any) -> dict[str, Any]:
    response = requests.post(
        f"{url}/v1/tasks", json=params, timeout=10, headers={"Authorization": f"Bearer {ADMIN}"}
    )
    assert response.status_code == 201, response.text
    return response.json()


def estimates(url: str, task_id: str, **body: Any) -> dict[str, Any]:
    response = requests.post(
        f"{url}/v1/tasks/{task_id}/estimates",
        json=body,
        timeout=30,
        headers={"Authorization": f"Bearer {ANALYST}"},
    )
    assert response.status_code == 200, response.text
    return response.json()


class DeviceNoise(threading.local):
    """The seeded generator of the device running on this thread."""

    rng: np.random.Generator | None = None


@pytest.fixture
def device_noise(monkeypatch: pytest.MonkeyPatch) -> DeviceNoise:
    """Make privatize draw from the current device's seeded generator (repeatable test)."""
    noise = DeviceNoise()
    for mechanism in (RandomizedResponse, CountMeanSketch):
        original = mechanism.privatize

        def privatize(self: Any, value: Any, rng: Any = None, _original: Any = original) -> Any:
            assert noise.rng is not None
            return _original(self, value, noise.rng)

        monkeypatch.setattr(mechanism, "privatize", privatize)
    return noise


def test_devices_against_the_real_aggregator(
    aggregator_url: str, device_noise: DeviceNoise
) -> None:
    create_task(aggregator_url, task_id="e2e-rr", mechanism="rr", epsilon=2.0, min_batch_size=50)
    # A fixed hash seed (the server would draw one): with seeded noise, the run is exact.
    upload_key = create_task(
        aggregator_url,
        task_id="e2e-cms",
        mechanism="cms",
        epsilon=4.0,
        k=64,
        m=256,
        hash_seed=1234,
        min_batch_size=50,
        upload_key_required=True,
    )["upload_key"]
    fruit = [name for name, count in FRUIT.items() for _ in range(count)]
    truth_yes = DEVICES // 3

    def device(i: int) -> ClientStats | None:
        device_noise.rng = np.random.default_rng([20261122, i])
        sdk = Client(
            aggregator_url,
            upload_key=upload_key,
            atexit_timeout=None,
            timeouts=PATIENT,
            task_ids=["e2e-rr", "e2e-cms"],
        )
        assert sdk.wait_for_tasks(timeout=30)
        queued = sdk.record("e2e-rr", i < truth_yes) and sdk.record("e2e-cms", fruit[i])
        closed = sdk.close(30)
        return None if queued and closed and sdk.stats().sent == 2 else sdk.stats()

    with ThreadPoolExecutor(max_workers=4) as pool:
        failed = [stats for stats in pool.map(device, range(DEVICES)) if stats is not None]
    assert failed == []

    level = 1 - 0.05 / (1 + len(FRUIT))  # Bonferroni: all five hold with 95%
    rr = estimates(aggregator_url, "e2e-rr", level=level)
    assert rr["n"] == DEVICES and rr["level"] == level
    yes = next(row for row in rr["estimates"] if row["value"] is True)
    assert yes["ci_low"] <= truth_yes <= yes["ci_high"]
    cms = estimates(aggregator_url, "e2e-cms", candidates=list(FRUIT), level=level)
    assert cms["n"] == DEVICES
    for row in cms["estimates"]:
        assert row["ci_low"] <= FRUIT[row["value"]] <= row["ci_high"], row
