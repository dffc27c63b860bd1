"""A malicious collector re-publishes a longitudinal task: the SDK's ledger holds, over HTTP.

The real aggregator serves on a free loopback port. To re-publish (tasks are immutable
through its API) the test plays a malicious operator: it rewrites the task's row in the
collector's database with changed fields (only ``flip``, the cheapest change) and
restarts the collector behind the same port. Devices then meet the new configuration
over HTTP — after an SDK restart with an on-disk ledger, within one SDK life in memory
(a restarted in-memory SDK is a new device: a new secret, new permanent responses). The
collector's own count of accepted reports shows how many permanent responses it got.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from ldp_telemetry.client import Client, Timeouts
from ldp_telemetry.shared import TaskConfig
from tests.support.collectors import make_app, served_in_thread
from tests.support.servers import ADMIN, ANALYST

pytestmark = pytest.mark.timeout(120)
TASK = "fonts"
EPSILON_INF = 2.0
DEVICES = 3
PATIENT = Timeouts(connect=10, read=30, config=10)


@dataclass
class Collector:
    """The real aggregator behind a switch, so that it can be restarted on the same port."""

    url: str
    database: Path
    app: Any

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        return self.app(environ, start_response)

    def restart(self) -> None:
        self.app = new_app(self.database)

    def republish(self, **changes: Any) -> str:
        """Rewrite the task with changed fields, as a malicious operator; return its fingerprint."""
        old = requests.get(f"{self.url}/v1/tasks/{TASK}", timeout=10).json()
        # The published integers follow the new fields (a stale T_i would be refused).
        fields = {k: v for k, v in old.items() if k != "derived"}
        task = TaskConfig.from_dict({**fields, **changes, "fingerprint": ""})
        with sqlite3.connect(self.database) as db:
            db.execute(
                "UPDATE tasks SET config = ? WHERE task_id = ?",
                (json.dumps(task.to_dict(), sort_keys=True), TASK),
            )
        db.close()
        self.restart()  # the collector caches tasks (immutable to it): a fresh process
        return task.fingerprint

    def accepted(self) -> int:
        """Return how many reports of the task the collector has counted."""
        response = requests.post(
            f"{self.url}/v1/tasks/{TASK}/estimates",
            json={"candidates": ["Inter"]},
            timeout=30,
            headers={"Authorization": f"Bearer {ANALYST}"},
        )
        assert response.status_code == 200, response.text
        return int(response.json()["n"])


def new_app(database: Path) -> Any:
    return make_app(str(database))


@pytest.fixture
def restartable_collector(tmp_path: Path) -> Iterator[Collector]:
    """Yield the collector with the longitudinal task created; stopped after the test."""
    database = tmp_path / "collector.sqlite3"
    switch = Collector("", database, new_app(database))
    with served_in_thread(switch) as url:
        switch.url = url
        created = requests.post(
            f"{switch.url}/v1/tasks",
            json={
                "task_id": TASK,
                "mechanism": "cms",
                "k": 16,
                "m": 64,
                "longitudinal": {"epsilon_inf": EPSILON_INF, "flip": 0.1},
                "min_batch_size": 1,
            },
            timeout=10,
            headers={"Authorization": f"Bearer {ADMIN}"},
        )
        assert created.status_code == 201, created.text
        yield switch


def value(device: int) -> str:
    return f"a-recognisable-font-{device}"


def open_sdk(restartable_collector: Collector, data_dir: Path | None, allowed: float) -> Client:
    sdk = Client(
        restartable_collector.url,
        data_dir=data_dir,
        task_ids=[TASK],
        reports_per_period=None,  # so that only the ledger stands between a re-publish and a PRR
        republished_epsilon_inf=allowed,
        atexit_timeout=None,
        flush_interval=0.05,
        timeouts=PATIENT,
    )
    assert sdk.wait_for_tasks(timeout=30)
    return sdk


def answer_republished(sdk: Client, data: str) -> bool:
    """Record until the SDK answers under the re-published task; return whether it sent.

    Until the SDK has fetched the new configuration, it reports under the old one and the
    collector refuses those reports as outdated (the SDK then fetches the new one).
    """
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        before = sdk.stats()
        queued = sdk.record(TASK, data)
        assert sdk.flush(timeout=10)
        after = sdk.stats()
        if not queued and after.dropped.get("config_changed", 0) > before.dropped.get(
            "config_changed", 0
        ):
            return False
        if after.sent > before.sent:
            return True
        time.sleep(0.05)
    raise AssertionError(f"the SDK never met the re-published task: {sdk.stats()}")


@pytest.mark.parametrize("on_disk", [False, True], ids=["memory", "disk"])
@pytest.mark.parametrize("allowed", [0.0, EPSILON_INF], ids=["default", "one-more"])
def test_a_republished_task_gets_no_permanent_response_beyond_the_cap(
    restartable_collector: Collector, tmp_path: Path, on_disk: bool, allowed: float
) -> None:
    def data_dir(device: int) -> Path | None:
        return tmp_path / f"device-{device}" if on_disk else None

    sdks = [open_sdk(restartable_collector, data_dir(d), allowed) for d in range(DEVICES)]
    for device, sdk in enumerate(sdks):
        assert sdk.record(TASK, value(device)) and sdk.flush(timeout=10)
    assert restartable_collector.accepted() == DEVICES  # one permanent response each, re-randomized

    restartable_collector.republish(longitudinal={"epsilon_inf": EPSILON_INF, "flip": 0.2})
    if on_disk:  # the SDK restarts (an app update, a reboot): its ledger is on disk
        for sdk in sdks:
            sdk.close(10)
        sdks = [open_sdk(restartable_collector, data_dir(d), allowed) for d in range(DEVICES)]
    sent = [answer_republished(sdk, value(device)) for device, sdk in enumerate(sdks)]
    assert sent == [allowed > 0] * DEVICES  # a second permanent response only if the app allows
    answered = DEVICES * (2 if allowed else 1)
    assert restartable_collector.accepted() == answered

    restartable_collector.republish(longitudinal={"epsilon_inf": EPSILON_INF, "flip": 0.3})
    assert [answer_republished(sdk, value(d)) for d, sdk in enumerate(sdks)] == [False] * DEVICES
    assert restartable_collector.accepted() == answered  # no third, whatever the app allowed
    for device, sdk in enumerate(sdks):
        assert sdk.stats().dropped["config_changed"] >= 1
        sdk.close(10)
        if on_disk:  # the ledger keeps HMAC keys, never the value
            stored = b"".join(f.read_bytes() for f in tmp_path.glob(f"device-{device}/*"))
            assert value(device).encode() not in stored
