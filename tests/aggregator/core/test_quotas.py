"""Upload quotas: a token bucket of reports per task; 429 with Retry-After past it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ldp_telemetry.aggregator import create_app
from ldp_telemetry.aggregator.core.quotas import Quotas, init_app
from ldp_telemetry.shared import TaskConfig, encode_batch
from tests.support.reports import envelopes, payloads
from tests.support.servers import ADMIN, bearer


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_bucket_refills_at_its_rate_up_to_its_burst() -> None:
    clock = Clock()
    quotas = Quotas(rate=10, burst=50, clock=clock)
    assert quotas.take("t", 50) == 0  # a full burst at once
    assert quotas.take("t", 5) == pytest.approx(0.5)  # nothing taken: 5 tokens in 0.5 s
    clock.now += 0.5
    assert quotas.take("t", 5) == 0
    assert quotas.take("other", 50) == 0  # one bucket per task
    clock.now += 1000
    assert quotas.take("t", 50) == 0 and quotas.take("t", 1) > 0  # capped at the burst
    assert quotas.take("t", 80) >= 1  # larger than any burst: never passes, says so
    assert Quotas(rate=0, burst=0).take("t", 10**9) == 0  # off


def test_workers_share_the_configured_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LDP_WORKERS", "4")
    quotas = init_app(20_000, 200_000)
    assert (quotas.rate, quotas.burst) == (5_000, 50_000)


def test_an_upload_over_quota_gets_429_with_retry_after(tmp_path: Path) -> None:
    app = create_app(
        {
            "DATABASE": str(tmp_path / "q.sqlite3"),
            "TESTING": True,
            "ADMIN_TOKEN": ADMIN,
            "QUOTA_RATE": 10,
            "QUOTA_BURST": 300,
        }
    )
    http = app.test_client()
    created = http.post(
        "/v1/tasks",
        headers=bearer(ADMIN),
        json={"task_id": "q", "mechanism": "grr", "epsilon": 2, "domain": ["a", "b"]},
    )
    task = TaskConfig.from_dict(created.json)

    def post(count: int, seed: int) -> object:
        reports = payloads(task, ["a"] * count, np.random.default_rng(seed))
        return http.post(
            "/v1/tasks/q/reports",
            data=encode_batch(task, envelopes(task, reports)),
            content_type="application/json",
        )

    assert post(200, 1).status_code == 200
    refused = post(200, 2)
    assert refused.status_code == 429
    body = refused.json
    assert body["type"].endswith(":too_many_requests") and "quota" in body["detail"]
    assert int(refused.headers["Retry-After"]) >= 10
    assert post(100, 3).status_code == 200  # what the bucket still holds passes
