"""Longitudinal tasks end to end: created over HTTP, recorded by the SDK, estimated."""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import requests

from ldp_telemetry.client import Client
from ldp_telemetry.client.budget import device_key
from ldp_telemetry.client.client import _privatize
from ldp_telemetry.shared import TaskConfig
from ldp_telemetry.shared.accuracy import rr_count_variance
from ldp_telemetry.shared.codec import batch_body
from ldp_telemetry.shared.mechanisms.longitudinal import Longitudinal
from tests.support.reports import create_task, envelopes, estimates, payloads, post_reports, upload
from tests.support.servers import ADMIN, Server

OPTION = {"epsilon_inf": 3.0, "flip": 0.1}


def test_a_longitudinal_task_publishes_both_epsilons(server: Server) -> None:
    task = create_task(
        server.url, task_id="fonts-lt", mechanism="cms", k=256, m=256, longitudinal=OPTION
    )
    listed = requests.get(f"{server.url}/v1/tasks/fonts-lt", timeout=10).json()
    assert listed["longitudinal"] == OPTION and listed["fingerprint"] == task.fingerprint
    assert 0 < listed["effective_epsilon"] < listed["effective_epsilon_inf"] <= 3.0
    refused = requests.post(
        f"{server.url}/v1/tasks",
        json={
            "task_id": "x",
            "mechanism": "cms",
            "k": 4,
            "m": 8,
            "epsilon": 2,
            "longitudinal": OPTION,
        },
        headers={"Authorization": f"Bearer {ADMIN}"},
        timeout=10,
    )
    assert refused.status_code == 400 and "leave epsilon out" in refused.json()["detail"]


def test_estimates_debias_both_layers(server: Server) -> None:
    task = create_task(
        server.url,
        task_id="colors-lt",
        mechanism="grr",
        domain=["red", "green", "blue"],
        longitudinal={"epsilon_inf": 2.0, "epsilon_1": 1.0},
        min_batch_size=10,
    )
    rng = np.random.default_rng(18)
    truth = ["red"] * 6_000 + ["green"] * 3_000 + ["blue"] * 1_000
    assert upload(server.url, task, envelopes(task, payloads(task, truth, rng))) == 10_000
    answer = estimates(server.url, "colors-lt").json()
    assert answer["effective_epsilon"] <= 1.0
    for row, count in zip(answer["estimates"], (6_000, 3_000, 1_000), strict=True):
        assert abs(row["estimate"] - count) < 4 * row["std_error"], row
        assert row["ci_low"] < row["estimate"] < row["ci_high"]


def test_one_devices_repeated_reports_converge_to_its_permanent_answer(
    server: Server, tmp_path: Path
) -> None:
    """One device's reports of True: their share of 1s is ~0.9 or ~0.1 — its permanent
    answer (derived from its secret file) re-randomized, whatever the value.

    The SDK sends one report per value and period; 300 periods are simulated by calling
    the SDK's own privatization 300 times with the device's secret, after a real Client
    created that secret and delivered one report.
    """
    task = create_task(
        server.url,
        task_id="opted-in",
        mechanism="rr",
        longitudinal={"epsilon_inf": 1.0, "flip": 0.1},
        min_batch_size=1,
    )
    sdk = Client(server.url, tasks=[task], data_dir=tmp_path / "device")
    try:
        assert sdk.record("opted-in", True)
        assert sdk.flush(timeout=30)
    finally:
        sdk.close(timeout=10)
    secret = (tmp_path / "device" / "device.key").read_bytes()
    period = task.floor_time(time.time())
    texts = [_privatize(task, secret, period, True).report for _ in range(300)]
    response = post_reports(server.url, task.task_id, batch_body(texts))
    assert response.status_code == 200 and response.json()["accepted"] == 300

    answer = estimates(server.url, "opted-in").json()
    assert answer["n"] == 301
    share = _ones(task, answer) / 301
    mechanism = task.mechanism_object
    assert isinstance(mechanism, Longitudinal)
    permanent = mechanism.for_device(device_key(secret, task)).permanent_response(True)
    assert abs(share - (0.9 if permanent else 0.1)) < 0.06, (share, permanent)


def _ones(task: TaskConfig, answer: dict[str, Any]) -> float:
    """Return the count of 1 answers behind an rr estimate (the estimator is affine in it)."""
    mechanism = task.mechanism_object
    assert isinstance(mechanism, Longitudinal)
    instant: Any = mechanism.instant  # what one report follows: rr with both layers composed
    p11, p10 = instant.p11, instant.p10
    yes = {r["value"]: r["estimate"] for r in answer["estimates"]}[True]
    return yes * (p11 - p10) + answer["n"] * p10


def test_intervals_over_several_buckets_carry_the_shared_permanent_responses(
    server: Server,
) -> None:
    task = create_task(
        server.url,
        task_id="hourly-lt",
        mechanism="rr",
        longitudinal={"epsilon_inf": 2.0, "flip": 0.1},
        time_precision=3600,
        min_batch_size=10,
    )
    rng = np.random.default_rng(7)
    now = time.time()
    for at in (now - 3600, now):
        batch = envelopes(task, payloads(task, [True] * 700 + [False] * 300, rng), at=at)
        assert upload(server.url, task, batch) == 1_000
    one = estimates(server.url, "hourly-lt", start=task.floor_time(now)).json()
    both = estimates(server.url, "hourly-lt").json()
    assert one["buckets"] == 1 and both["buckets"] == 2 and both["n"] == 2_000
    plain = task.mechanism_object
    assert isinstance(plain, Longitudinal)
    sums = plain.new_sums()
    ones = round(_ones(task, both))
    sums.load(np.array([2_000]), np.array([[ones]]))
    answer = plain.estimate(sums)
    independent = answer.std_error[0]  # as if all 2,000 were independent
    # Each report has one partner sharing its permanent response: their covariance is the
    # permanent layer's own variance (rr at ε∞), at the yes count estimated.
    permanent: Any = plain.permanent
    yes = min(max(float(answer.estimate[0]), 0.0), 2_000.0)
    shared = rr_count_variance(2_000, yes, permanent.p11, permanent.p10)
    widened = both["estimates"][0]["std_error"]
    assert widened == pytest.approx(math.sqrt(independent**2 + shared))
    assert independent < widened < independent * math.sqrt(2)


@pytest.mark.parametrize("mechanism", ["cms", "hcms"])
def test_honest_devices_repeating_over_buckets_are_not_flagged(
    server: Server, mechanism: str
) -> None:
    """3,000 devices each report one value in 3 buckets, from one permanent response.

    Their reports share a row (and cms's bits) across buckets: tested as independent
    reports, the window's row spread was z ≈ 13 and the honest window `suspected`.
    """
    task = create_task(
        server.url,
        task_id=f"repeating-{mechanism}",
        mechanism=mechanism,
        k=256,
        m=256,
        longitudinal={"epsilon_inf": 4.0, "flip": 0.05},
        time_precision=3600,
        min_batch_size=10,
    )
    layer = task.mechanism_object
    assert isinstance(layer, Longitudinal)
    permanent: Any = layer.permanent
    rng = np.random.default_rng(11)
    values = [f"w{int(x)}" for x in rng.integers(0, 300, 3_000)]
    responses = permanent.privatize_many(values, rng)  # each device's, drawn once
    now = time.time()
    for hours in range(3):
        batch = permanent.reflip_many(responses, layer.threshold, rng)
        reports = [batch.report(i) for i in range(len(values))]
        assert upload(server.url, task, envelopes(task, reports, at=now - 3600 * hours)) == 3_000
    answer = estimates(server.url, task.task_id, candidates=["w1"]).json()
    assert answer["buckets"] == 3 and answer["n"] == 9_000
    checks = {c["test"]: c["z"] for c in answer["anomaly"]["checks"]}
    assert answer["anomaly"]["suspected"] is False, checks
    # A fake device piling 600 reports on one row in one bucket is still seen.
    row = int(np.argmin(np.bincount(responses.rows, minlength=256)))
    piled = [dataclasses.replace(batch.report(i), row=row) for i in range(600)]
    assert upload(server.url, task, envelopes(task, piled, at=now)) == 600
    answer = estimates(server.url, task.task_id, candidates=["w1"]).json()
    assert answer["anomaly"]["suspected"] is True
