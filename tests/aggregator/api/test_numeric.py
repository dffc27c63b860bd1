"""Numeric tasks end to end: the SDK records numbers, the collector answers statistics."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from ldp_telemetry.client import Client
from tests.support.reports import create_task, envelopes, estimates, upload
from tests.support.servers import Server


def test_the_collector_answers_mean_percentiles_and_histogram(server: Server) -> None:
    task = create_task(
        server.url,
        task_id="load-time",
        mechanism="numeric",
        epsilon=3.0,
        lo=1,
        hi=10_000,
        scale="log",
        buckets=128,
        min_batch_size=100,
    )
    rng = np.random.default_rng(12)
    values = rng.lognormal(math.log(120), 0.7, 30_000)
    batch = task.mechanism_object.privatize_many(values, rng)
    assert upload(server.url, task, envelopes(task, [int(x) for x in batch])) == len(values)

    answer = estimates(server.url, "load-time").json()
    rows = {row["value"]: row for row in answer["estimates"]}
    assert answer["n"] == 30_000 and set(rows) >= {"mean", "p50", "p95", "p99", "last_bucket"}
    for name, truth in (("p50", np.median(values)), ("p95", np.percentile(values, 95))):
        row = rows[name]
        assert abs(row["estimate"] / truth - 1) < 0.06, (name, row, truth)
        assert row["ci_low"] < row["estimate"] < row["ci_high"] and row["std_error"] > 0
    assert rows["p50"]["reliable"] is True and "reason" not in rows["p50"]
    assert all(row["reliable"] or row["reason"] for row in answer["estimates"])
    assert rows["last_bucket"]["ci_low"] < 0.0 < rows["last_bucket"]["ci_high"]  # none there
    assert abs(rows["mean"]["estimate"] / values.mean() - 1) < 0.1

    histogram = estimates(server.url, "load-time", candidates=["histogram"]).json()
    assert len(histogram["estimates"]) == 128
    assert histogram["estimates"][0]["value"] == "[1, 1.07461)"
    assert sum(r["estimate"] for r in histogram["estimates"]) == pytest.approx(30_000)

    wrong = estimates(server.url, "load-time", candidates=["median"])
    assert wrong.status_code == 400 and "unknown statistic" in wrong.json()["detail"]
    renamed = estimates(server.url, "load-time", candidates=["clipped_high"])
    assert renamed.status_code == 400 and "now last_bucket" in renamed.json()["detail"]


def test_the_sdk_records_numbers(server: Server, tmp_path: Path) -> None:
    task = create_task(
        server.url,
        task_id="mean-memory",
        mechanism="numeric",
        method="1bit",
        epsilon=2.0,
        lo=0,
        hi=1000,
        min_batch_size=10,
    )
    sdk = Client(server.url, tasks=[task], data_dir=tmp_path / "device", reports_per_period=None)
    try:
        for i in range(40):
            assert sdk.record("mean-memory", 100.0 + 10 * i)  # one bucket each: 40 reports
        assert not sdk.record("mean-memory", "a lot")  # not a number: refused, counted
        assert sdk.flush(timeout=30)
    finally:
        sdk.close(timeout=10)
    answer = estimates(server.url, "mean-memory").json()
    assert answer["n"] == 40 and [r["value"] for r in answer["estimates"]] == ["mean"]
    mean = answer["estimates"][0]
    assert mean["ci_low"] < mean["estimate"] < mean["ci_high"]
