"""oue and ss end to end over HTTP, on both stores: counted exactly, estimates near the truth.

The batch test privatizes with shared's vectorized path (seeded) and checks the collector's
answer against the same reports summed locally (exact integer sums: equal estimates), the
truth (within 4 standard errors) and the closed-form standard error (within 10%). The SDK
test records through the real client, which privatizes one report at a time from the OS
CSPRNG.
"""

from __future__ import annotations

import math
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import requests

from ldp_telemetry.client import Client
from tests.support.reports import create_task, envelopes, estimates, upload
from tests.support.servers import ADMIN, Server, bearer

DEVICES = 120
DOMAIN = [f"country-{i:02d}" for i in range(40)]


def population(size: int, rng: np.random.Generator) -> list[str]:
    """Return ``size`` values drawn from a skewed (Zipf-like) distribution over DOMAIN."""
    weights = 1.0 / np.arange(1, len(DOMAIN) + 1)
    picks = rng.choice(len(DOMAIN), size=size, p=weights / weights.sum())
    return [DOMAIN[i] for i in picks]


@pytest.mark.parametrize("mechanism", ["oue", "ss"])
def test_batches_are_counted_exactly_and_estimates_hold(server: Server, mechanism: str) -> None:
    task = create_task(
        server.url,
        task_id=f"batch-{mechanism}",
        mechanism=mechanism,
        epsilon=2.0,
        domain=DOMAIN,
        min_batch_size=10,
    )
    rng = np.random.default_rng(30)
    values = population(10_000, rng)
    kind = task.mechanism_object
    batch = kind.privatize_many(values, rng)
    reports = [
        bytes(row.tobytes()) if row.dtype == np.uint8 else tuple(int(i) for i in row)
        for row in batch
    ]
    assert upload(server.url, task, envelopes(task, reports), size=2000) == len(values)

    answer = estimates(server.url, task.task_id).json()
    local = kind.new_sums()
    local.add_many(batch)
    expected = kind.estimate(local)
    assert answer["n"] == len(values)
    assert [row["value"] for row in answer["estimates"]] == DOMAIN
    assert np.allclose([row["estimate"] for row in answer["estimates"]], expected.estimate)
    truth = Counter(values)
    for row in answer["estimates"]:
        count = truth[row["value"]]
        assert abs(row["estimate"] - count) <= 4 * row["std_error"], row
        closed = math.sqrt(float(kind.count_variance(len(values), count)))
        assert row["std_error"] == pytest.approx(closed, rel=0.10), row


@pytest.mark.parametrize("mechanism", ["oue", "ss"])
def test_the_sdk_records_through_the_collector(
    server: Server, tmp_path: Path, mechanism: str
) -> None:
    task = create_task(
        server.url,
        task_id=f"sdk-{mechanism}",
        mechanism=mechanism,
        epsilon=4.0,
        domain=DOMAIN[:12],
        min_batch_size=10,
    )
    values = [DOMAIN[i % 3] for i in range(DEVICES)]

    def device(i: int) -> bool:
        # One client per device: a device reports a value once per period (PROTOCOL §4).
        sdk = Client(server.url, tasks=[task], data_dir=tmp_path / f"device-{i}")
        try:
            recorded = sdk.record(task.task_id, values[i])
            refused = not sdk.record(task.task_id, "atlantis")  # outside the domain
            return recorded and refused and sdk.flush(timeout=60)
        finally:
            sdk.close(timeout=10)

    with ThreadPoolExecutor(max_workers=4) as pool:
        assert all(pool.map(device, range(DEVICES)))
    answer = estimates(server.url, task.task_id).json()
    assert answer["n"] == len(values)
    truth = Counter(values)
    # The SDK's noise is CSPRNG (unseedable), so the bound must hold by design: 5 SE over
    # 12 rows fails a correct estimator about once in 10^5 runs (4 SE missed once in ~100).
    for row in answer["estimates"]:
        assert abs(row["estimate"] - truth[row["value"]]) <= 5 * row["std_error"], row


def test_auto_records_its_choice_over_http(server: Server) -> None:
    task = create_task(
        server.url,
        task_id="auto-countries",
        mechanism="auto",
        epsilon=2.0,
        domain=[f"c{i}" for i in range(64)],
        min_batch_size=10,
    )
    assert task.mechanism == "ss" and task.selection is not None
    assert task.selection["mechanism"] == "ss" and task.selection["max_report_bytes"] == 512
    public = requests.get(f"{server.url}/v1/tasks/auto-countries", timeout=10).json()
    assert public["selection"] == task.selection and public["mechanism"] == "ss"
    assert 0 < public["attack_success"] < 1


def test_auto_names_what_it_needs(server: Server) -> None:
    answer = requests.post(
        f"{server.url}/v1/tasks",
        json={"task_id": "auto-bad", "mechanism": "auto", "epsilon": 2.0},
        headers=bearer(ADMIN),
        timeout=10,
    )
    assert answer.status_code == 400 and "expected_distinct" in answer.json()["detail"]
