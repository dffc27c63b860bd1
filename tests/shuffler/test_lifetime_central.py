"""A device's central epsilon over the days it reported in, through a real shuffler: the answer
composes one batch per day (the day's weakest; with dimensions, the row's own slice counts),
checked against an independent composition of the per-batch bounds."""

from __future__ import annotations

import itertools
import math
import signal
import time
from dataclasses import replace
from pathlib import Path

import pytest
import requests

from ldp_telemetry.shared import TaskConfig, encode_batch
from ldp_telemetry.shared.codec import Envelope, new_report_id
from ldp_telemetry.shared.shuffling.accountant import central_epsilon
from ldp_telemetry.shared.shuffling.amplification import reduction_of
from ldp_telemetry.shared.shuffling.composition import optimal_homogeneous_epsilon
from tests.shuffler.processes import health, shuffler_token, start_shuffler, wait_for
from tests.support.reports import create_task
from tests.support.servers import ANALYST, Server, bearer

pytestmark = pytest.mark.timeout(240)
PLATFORM = {"name": "platform", "values": ["android", "ios"]}
UPLOADS = 60  # per task and day, = --batch-min: each day is exactly one batch of them
DAYS = {2: (35, 25), 1: (40, 20), 0: (30, 30)}  # days ago: (android, ios) uploads
DELTA = 1e-8


def test_the_lifetime_block_composes_one_batch_per_day(
    collector_process: Server, tmp_path: Path
) -> None:
    url = collector_process.url
    plain = create_task(url, task_id="plain", mechanism="rr", epsilon=2.0, min_batch_size=1)
    sliced = create_task(
        url, task_id="sliced", mechanism="rr", epsilon=2.0, min_batch_size=1,
        dimensions=[PLATFORM],
    )  # fmt: skip
    token = shuffler_token(Path(str(collector_process.db)))
    shuffler = start_shuffler(url, token, tmp_path / "spool.sqlite3", UPLOADS)
    try:
        for ago, (android, ios) in DAYS.items():
            for slice_index in [0] * android + [1] * ios:
                upload(shuffler.url, plain, report(plain, ago))
                upload(shuffler.url, sliced, replace(report(sliced, ago), slice=slice_index))
        wait_for(lambda: health(shuffler).get("accepted", 0) == 2 * UPLOADS * len(DAYS), 90)
    finally:
        shuffler.kill(signal.SIGKILL)

    def accountant(task: TaskConfig, n: int) -> float:
        return central_epsilon(reduction_of(task.mechanism_object), n, DELTA)

    body = ask(url, "plain")
    lifetime = body["lifetime"]
    assert (lifetime["batches"], lifetime["delta"]) == (3, pytest.approx(6 * DELTA, rel=1e-12))
    one = accountant(plain, UPLOADS)
    assert lifetime["naive_epsilon"] == pytest.approx(3 * one, rel=1e-12)
    exact = optimal_homogeneous_epsilon(one, DELTA, 3, lifetime["delta"])
    assert exact * (1 - 1e-8) <= lifetime["epsilon"] <= exact * 1.001
    assert body["central_epsilon"] == one < lifetime["epsilon"] <= lifetime["naive_epsilon"]

    body = ask(url, "sliced", group_by=["platform"])
    rows = {row["dimensions"]["platform"]: row for row in body["slices"]}
    for name, counts in (("android", [35, 40, 30]), ("ios", [25, 20, 30])):
        epsilons = [accountant(sliced, n) for n in counts]
        check(rows[name]["lifetime"], epsilons)
    weakest = [min(pair) for pair in DAYS.values()]  # the totals: each day's weakest slice
    check(body["lifetime"], [accountant(sliced, n) for n in weakest])


def check(lifetime: dict, epsilons: list[float]) -> None:
    """Assert the answer is the composition of ``epsilons``: its δ at the answered ε,
    counted over every outcome of the batches' worst mechanisms, is within the answered δ,
    and no ε 0.2% lower would be."""
    assert lifetime["batches"] == len(epsilons)
    assert lifetime["naive_epsilon"] == pytest.approx(sum(epsilons), rel=1e-12)
    assert brute_force_delta(epsilons, lifetime["epsilon"]) <= lifetime["delta"]
    assert brute_force_delta(epsilons, lifetime["epsilon"] / 1.002) > lifetime["delta"]


def brute_force_delta(epsilons: list[float], total: float) -> float:
    """Return δ at ε' = total of the composed (εᵢ, δ) pairs' worst mechanisms."""
    outcomes = [
        [
            (math.inf, DELTA),
            (e, (1 - DELTA) / (1 + math.exp(-e))),
            (-e, (1 - DELTA) / (1 + math.exp(e))),
        ]
        for e in epsilons
    ]
    hockey = 0.0
    for combination in itertools.product(*outcomes):
        loss = sum(value for value, _ in combination)
        mass = math.prod(probability for _, probability in combination)
        hockey += mass if loss == math.inf else mass * max(0.0, 1.0 - math.exp(total - loss))
    return hockey


def ask(url: str, task_id: str, **query: object) -> dict:
    answer = requests.post(
        f"{url}/v1/tasks/{task_id}/estimates", json=query, headers=bearer(ANALYST), timeout=60
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def upload(shuffler_url: str, task: TaskConfig, envelope: Envelope) -> None:
    answer = requests.post(
        f"{shuffler_url}/v1/tasks/{task.task_id}/reports",
        data=encode_batch(task, [envelope]),
        headers={"Content-Type": "application/json"},
        timeout=30,
    )
    assert answer.status_code == 202, answer.text


def report(task: TaskConfig, days_ago: int) -> Envelope:
    bucket = task.floor_time(time.time() - days_ago * 86_400)
    return Envelope(new_report_id(), task.fingerprint, bucket, True)
