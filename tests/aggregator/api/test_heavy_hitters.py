"""Heavy hitters through HTTP: devices with their own secrets, the collector finds them."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import requests
from flask.testing import FlaskClient

from ldp_telemetry.client.budget import device_key
from ldp_telemetry.shared import TaskConfig
from tests.support.reports import TIMEOUT, create_task, envelopes, estimates, upload
from tests.support.servers import ADMIN, ANALYST, Server, bearer

LETTERS = "abcdefghijklmnopqrstuvwxyz"
HEAVY = {"hello": 9000, "world": 6000, "privacy": 4000, "ab": 3000}
RARE = "zzq"
TASK = dict(
    mechanism="hh",
    epsilon=4.0,
    k=64,
    m=256,
    hash_seed=99,
    alphabet=LETTERS,
    max_length=8,
    min_batch_size=100,
)


def heavy_hitters(url: str, task_id: str, **body: Any) -> requests.Response:
    return requests.post(
        f"{url}/v1/tasks/{task_id}/heavy-hitters",
        json=body,
        headers=bearer(ANALYST),
        timeout=TIMEOUT,
    )


def population(rng: np.random.Generator) -> list[str]:
    values = [w for w, count in HEAVY.items() for _ in range(count)] + [RARE] * 30
    letters = np.array(list(LETTERS))
    values += ["".join(rng.choice(letters, size=rng.integers(3, 9))) for _ in range(16_000)]
    return [values[i] for i in rng.permutation(len(values))]


def device_levels(task: TaskConfig, count: int) -> np.ndarray:
    """Each device's level from its own secret, exactly as the SDK derives it."""
    mechanism = task.mechanism_object
    secrets = (hashlib.sha256(f"device-secret-{i}".encode()).digest() for i in range(count))
    return np.array([mechanism.for_device(device_key(s, task)).device_level for s in secrets])


def test_the_collector_finds_the_planted_heavy_hitters(server: Server) -> None:
    task = create_task(server.url, task_id="hh-words", **TASK)
    rng = np.random.default_rng(20261124)
    values = population(rng)
    batch = task.mechanism_object.privatize_many(
        values, rng, levels=device_levels(task, len(values))
    )
    reports = [batch.report(i) for i in range(len(values))]
    assert upload(server.url, task, envelopes(task, reports), size=2000) == len(values)

    response = heavy_hitters(server.url, task.task_id, top=10, survivors=32, level=0.95)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["n"] == len(values) and body["levels"] == 4 and len(body["examined"]) == 4
    assert body["examined"][0] == 26 + 26 * 26
    rows = {row["value"]: row for row in body["heavy_hitters"]}
    assert set(list(rows)[: len(HEAVY)]) == set(HEAVY)
    assert {value for value, row in rows.items() if row["reliable"]} == set(HEAVY)
    for word, count in HEAVY.items():
        assert rows[word]["ci_low"] <= count <= rows[word]["ci_high"], rows[word]

    # The estimates endpoint of an hh task estimates named full strings.
    named = estimates(server.url, task.task_id, candidates=["hello", RARE])
    assert named.status_code == 200, named.text
    hello, rare = named.json()["estimates"]
    # The same levels' estimate, but for the other found strings' collisions, which a
    # discovery takes out (ldp_telemetry.shared.mechanisms.hh.collisions) and the named estimate's
    # standard error counts as noise.
    assert abs(hello["estimate"] - rows["hello"]["estimate"]) < hello["std_error"]
    assert rare["ci_low"] <= 30 <= rare["ci_high"]
    bad = estimates(server.url, task.task_id, candidates=["Hello!"])
    assert bad.status_code == 400 and "alphabet" in bad.json()["detail"]


def test_heavy_hitters_refuses_what_it_cannot_answer(client: FlaskClient) -> None:
    admin, analyst = bearer(ADMIN), bearer(ANALYST)
    for params in (
        {"task_id": "words", **TASK},
        {"task_id": "fruit", "mechanism": "cms", "epsilon": 4, "k": 8, "m": 16},
    ):
        assert client.post("/v1/tasks", json=params, headers=admin).status_code == 201
    url = "/v1/tasks/{}/heavy-hitters"
    response = client.post(url.format("fruit"), json={}, headers=analyst)
    assert response.status_code == 422 and response.json["type"].endswith("not_discoverable")
    response = client.post(url.format("words"), json={}, headers=analyst)
    assert response.status_code == 422 and response.json["type"].endswith("below_min_batch_size")
    for body in (
        {"top": 0},
        {"top": True},
        {"level": 1.5},
        {"candidates": ["a"]},
        {"start": 10, "end": 5},
        [1],
    ):
        response = client.post(url.format("words"), json=body, headers=analyst)
        assert response.status_code == 400, body
    assert client.post(url.format("words"), json={}).status_code == 401
    assert client.post(url.format("nope"), json={}, headers=analyst).status_code == 404


def test_a_task_given_only_max_length_is_searchable_with_the_defaults(server: Server) -> None:
    """bytes, first 2 and the default step: the default query runs (step 2 is refused)."""
    plain = {"mechanism": "hh", "epsilon": 4.0, "k": 64, "m": 256, "max_length": 6}
    refused = requests.post(
        f"{server.url}/v1/tasks",
        json={"task_id": "hh-step2", **plain, "step": 2},
        headers=bearer(ADMIN),
        timeout=TIMEOUT,
    )
    assert refused.status_code == 400, refused.text
    assert "3,794,752 candidates" in refused.json()["detail"]
    assert "use step 1" in refused.json()["detail"]

    task = create_task(server.url, task_id="hh-bytes", min_batch_size=100, **plain)
    assert (task.alphabet, task.first, task.step) == ("bytes", 2, 1)
    rng = np.random.default_rng(7)
    heavy = {"hello": 5000, "café": 4000, "ok": 3000}  # "café" is 5 bytes
    letters = np.array(list(LETTERS))
    values = [w for w, count in heavy.items() for _ in range(count)]
    values += ["".join(rng.choice(letters, size=rng.integers(3, 7))) for _ in range(4000)]
    batch = task.mechanism_object.privatize_many(
        values, rng, levels=device_levels(task, len(values))
    )
    reports = [batch.report(i) for i in range(len(values))]
    assert upload(server.url, task, envelopes(task, reports), size=2000) == len(values)

    response = heavy_hitters(server.url, task.task_id)  # the defaults: top 20, 64 survivors
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["levels"] == 5 and body["examined"][0] == 243**2 + 243
    rows = body["heavy_hitters"]
    assert {row["value"] for row in rows[:3]} == set(heavy)
    assert all(row["reliable"] for row in rows[:3])
