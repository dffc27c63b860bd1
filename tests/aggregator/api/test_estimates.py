"""Through HTTP: create every kind of task, upload a known population, check the CIs."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

from tests.support.reports import create_task, envelopes, estimates, payloads, upload
from tests.support.servers import ADMIN, Server

POPULATIONS: dict[str, tuple[dict[str, Any], dict[Any, int]]] = {
    "rr": ({"mechanism": "rr", "epsilon": 1.0}, {True: 900, False: 2100}),
    "rr-alpha-beta": ({"mechanism": "rr", "alpha": 0.5, "beta": 0.5}, {True: 1200, False: 1800}),
    "grr": (
        {"mechanism": "grr", "epsilon": 2.0, "domain": ["a", "b", "c", "d", "e"]},
        {"a": 1500, "b": 800, "c": 400, "d": 200, "e": 100},
    ),
    "cms": (
        {"mechanism": "cms", "epsilon": 4.0, "k": 32, "m": 256, "hash_seed": 7},
        {"apple": 1200, "pear": 600, "fig": 300, "kiwi": 0},
    ),
    "hcms": (
        {"mechanism": "hcms", "epsilon": 4.0, "k": 32, "m": 256, "hash_seed": 7},
        {"apple": 1200, "pear": 600, "fig": 300, "kiwi": 0},
    ),
}
SKETCH_TAIL = 900  # distinct one-off values added to the sketch populations
# The sketch tasks fix hash_seed (the server draws one otherwise) so that the seeded
# population gives the same reports, hence the same intervals, on every run.


def population(truth: dict[Any, int], sketch: bool) -> list[Any]:
    values = [value for value, count in truth.items() for _ in range(count)]
    return values + [f"rare-{i}" for i in range(SKETCH_TAIL)] if sketch else values


@pytest.mark.parametrize("name", sorted(POPULATIONS))
def test_intervals_contain_the_truth(server: Server, name: str) -> None:
    params, truth = POPULATIONS[name]
    task = create_task(server.url, task_id=f"accuracy-{name}", **params)
    sketch = task.mechanism in ("cms", "hcms")
    values = population(truth, sketch)
    rng = np.random.default_rng(20261122)
    shuffled = [values[i] for i in rng.permutation(len(values))]
    assert upload(server.url, task, envelopes(task, payloads(task, shuffled, rng))) == len(values)

    query = {} if task.mechanism == "rr" else {"candidates": [str(v) for v in truth]}
    response = estimates(server.url, task.task_id, level=0.95, **query)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["n"] == len(values) and body["mechanism"] == task.mechanism
    assert body["effective_epsilon"] == pytest.approx(task.effective_epsilon)
    assert [row["value"] for row in body["estimates"]] == list(truth)
    for row in body["estimates"]:
        assert row["ci_low"] <= truth[row["value"]] <= row["ci_high"], row
        assert row["std_error"] > 0


def test_admin_token_may_query_and_range_below_minimum_is_typed(server: Server) -> None:
    task = create_task(
        server.url,
        task_id="ranges",
        mechanism="rr",
        epsilon=2.0,
        min_batch_size=50,
        time_precision=3600,
    )
    rng = np.random.default_rng(3)
    bucket = task.floor_time(time.time())
    upload(server.url, task, envelopes(task, payloads(task, [True] * 60, rng), at=bucket))
    assert estimates(server.url, "ranges", token=ADMIN).json()["n"] == 60

    empty = estimates(server.url, "ranges", start=bucket + 3600, end=bucket + 7200)
    assert empty.status_code == 422
    problem = empty.json()
    assert problem["type"].endswith(":below_min_batch_size")
    assert (problem["n"], problem["min_batch_size"]) == (0, 50)
    assert empty.headers["Content-Type"] == "application/problem+json"
    inside = estimates(server.url, "ranges", start=bucket, end=bucket + 3600).json()
    assert (inside["n"], inside["start"], inside["end"]) == (60, bucket, bucket + 3600)


@pytest.mark.parametrize(
    ("case", "query", "fix"),
    [
        ("rr-candidates", {"candidates": ["x"]}, "leave out candidates"),
        ("level", {"level": 1.5}, "level"),
        ("range", {"start": 10, "end": 5}, "before end"),
        ("start-type", {"start": "yesterday"}, "Unix seconds"),
        ("unknown", {"colour": "blue"}, "unknown fields"),
    ],
)
def test_bad_queries_say_what_to_fix(
    server: Server, case: str, query: dict[str, Any], fix: str
) -> None:
    create_task(server.url, task_id=f"query-{case}", mechanism="rr", epsilon=1.0)
    response = estimates(server.url, f"query-{case}", **query)
    assert response.status_code == 400
    assert response.json()["type"].endswith(":invalid_query")
    assert fix in response.json()["detail"]
