"""End to end, on both stores: SDK devices with public dimensions against a real collector.

Devices spread over 3 platforms × 4 app versions (plus values outside the lists, which land
in ``other``), each with its own Client and its own value distribution per platform, upload
over HTTP. The collector's slices then hold exactly the devices' coarsened dimensions, add
up to the task's n, and each well-filled slice's estimate (the mechanism's estimator on that
slice's sums) lies within 4 SE of the slice's truth; a raw report whose dims break the
rules is refused with its reason. Each device's noise comes from a seeded generator, so the
test is repeatable (the SDK itself always uses the OS CSPRNG).
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import requests

from ldp_telemetry.aggregator.core.config import DEFAULTS
from ldp_telemetry.aggregator.store.backends import open_store
from ldp_telemetry.client import Client, Timeouts
from ldp_telemetry.shared import Envelope, TaskConfig, encode_report, new_report_id
from ldp_telemetry.shared.codec import b64encode
from ldp_telemetry.shared.mechanisms.grr import GeneralizedRandomizedResponse
from tests.support.reports import create_task, estimates_json, post_reports
from tests.support.servers import Server, start_server

pytestmark = pytest.mark.timeout(180)
DEVICES = 3000
PATIENT = Timeouts(connect=10, read=30, config=10)
VALUES = ["a", "b", "c", "d"]
# The platforms devices run on (linux is not in the task's list: it lands in other) and
# each one's share of devices and distribution of values.
PLATFORMS = {
    "android": (0.4, [0.5, 0.3, 0.15, 0.05]),
    "ios": (0.3, [0.1, 0.2, 0.3, 0.4]),
    "web": (0.2, [0.25, 0.25, 0.25, 0.25]),
    "linux": (0.1, [0.7, 0.1, 0.1, 0.1]),
}
VERSIONS = ["5.1", "5.2", "5.3", "5.4", "6.0-beta"]  # 6.0-beta is not in the list: other
DIMENSIONS = [
    {"name": "platform", "values": ["android", "ios", "web"]},
    {"name": "app_version", "values": ["5.1", "5.2", "5.3", "5.4"]},
]


@pytest.fixture(params=["sqlite", "postgresql"])
def collector(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Server, str]]:
    """Yield a real collector on a fresh database of each store, and its database."""
    if request.param == "sqlite":
        db = str(tmp_path / "dims.sqlite3")
    else:
        db = request.getfixturevalue("postgres").new_database()
    server = start_server(db, folder=tmp_path)
    yield server, db
    server.kill()


class DeviceNoise(threading.local):
    """The seeded generator of the device running on this thread."""

    rng: np.random.Generator | None = None


@pytest.fixture
def device_noise(monkeypatch: pytest.MonkeyPatch) -> DeviceNoise:
    """Make grr's privatize draw from the current device's seeded generator."""
    noise = DeviceNoise()
    original = GeneralizedRandomizedResponse.privatize

    def privatize(self: Any, value: Any, rng: Any = None) -> Any:
        assert noise.rng is not None
        return original(self, value, noise.rng)

    monkeypatch.setattr(GeneralizedRandomizedResponse, "privatize", privatize)
    return noise


def population(rng: np.random.Generator) -> list[tuple[str, str, str]]:
    """Return each device's (platform, app version, value)."""
    names = list(PLATFORMS)
    platforms = rng.choice(len(names), size=DEVICES, p=[PLATFORMS[p][0] for p in names])
    versions = rng.integers(len(VERSIONS), size=DEVICES)
    devices = []
    for platform, version in zip(platforms, versions, strict=True):
        name = names[int(platform)]
        value = VALUES[int(rng.choice(len(VALUES), p=PLATFORMS[name][1]))]
        devices.append((name, VERSIONS[int(version)], value))
    return devices


def test_slices_hold_the_devices_and_add_up_to_n(
    collector: tuple[Server, str], device_noise: DeviceNoise
) -> None:
    server, db = collector
    task = create_task(
        server.url, task_id="fonts", mechanism="grr", epsilon=2.0, domain=VALUES,
        min_batch_size=20, dimensions=DIMENSIONS,
    )  # fmt: skip
    assert task.dimensions is not None and task.slice_count == 20
    devices = population(np.random.default_rng(38))

    def run(index: int) -> int:
        platform, version, value = devices[index]
        device_noise.rng = np.random.default_rng(10_000 + index)
        sdk = Client(
            server.url, tasks=[task], timeouts=PATIENT, reports_per_period=None,
            atexit_timeout=None,
            dimensions={"platform": platform, "app_version": version, "model": f"m{index}"},
        )  # fmt: skip
        assert sdk.record("fonts", value)
        assert sdk.close(60)
        return int(sdk.stats().sent)

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=16) as pool:
        assert sum(pool.map(run, range(DEVICES))) == DEVICES
    uploaded = time.monotonic() - started

    expected = Counter(
        task.dimensions.slice_of(task.dimensions.coarsen({"platform": p, "app_version": v}))
        for p, v, _ in devices
    )
    store = open_store(db, DEFAULTS)
    try:
        counts = store.slice_counts(task, None, None)
        assert counts == dict(sorted(expected.items()))
        assert sum(counts.values()) == estimates_json(server.url, "fonts")["n"] == DEVICES
        linux = sum(1 for p, _, _ in devices if p == "linux")  # out of the list: other
        assert sum(counts[i] for i in task.dimensions.matching({"platform": "other"})) == linux
        beta = sum(1 for _, v, _ in devices if v == "6.0-beta")
        assert sum(counts[i] for i in task.dimensions.matching({"app_version": "other"})) == beta
        _assert_slice_estimates(store, task, devices, counts)
    finally:
        getattr(store, "close", lambda: None)()
    _assert_raw_dims_refused(server, task)
    assert uploaded < 60, f"{DEVICES} devices took {uploaded:.0f} s"


def _assert_slice_estimates(
    store: Any, task: TaskConfig, devices: list[tuple[str, str, str]], counts: dict[int, int]
) -> None:
    """Each slice of at least 100 devices: every value's estimate within 4 SE of the truth."""
    assert task.dimensions is not None
    checked = 0
    for index, n in counts.items():
        if n < 100:
            continue
        values = task.dimensions.values_of(index)
        truth = Counter(
            value
            for p, v, value in devices
            if task.dimensions.coarsen({"platform": p, "app_version": v}) == values
        )
        with store.read_sums(task, None, None, [index]) as sums:
            assert sums.total == n
            result = task.mechanism_object.estimate(sums, None)
        for row in result.rows():
            error = abs(row["estimate"] - truth[row["value"]])
            assert error <= 4 * row["std_error"], (values, row, truth)
        checked += 1
    assert checked >= 4


def _assert_raw_dims_refused(server: Server, task: TaskConfig) -> None:
    """A raw report with an undeclared dimension value (or name, or none) is refused."""
    envelope = Envelope(new_report_id(), task.fingerprint, task.floor_time(time.time()), 0)
    good = encode_report(task, replace(envelope, slice=5))
    cases = {
        "dimension_value_unknown": {"platform": "ios", "app_version": "9.9"},
        "dimension_undeclared": {"platform": "ios", "app_version": "5.2", "model": "x"},
        "dimensions_missing": {"platform": "ios"},
    }
    reports = [
        {**good, "report_id": b64encode(new_report_id()), "dims": dims} for dims in cases.values()
    ]
    body = json.dumps({"reports": reports}).encode()
    answer = post_reports(server.url, "fonts", body).json()
    assert answer["accepted"] == 0
    assert [r["reason"] for r in answer["rejected"]] == list(cases)
    assert requests.get(f"{server.url}/metrics", timeout=30).status_code == 200
