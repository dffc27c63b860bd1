"""No input gets a 500: arbitrary JSON posted to every endpoint that takes a body."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from flask.testing import FlaskClient
from hypothesis import given, settings
from hypothesis import strategies as st

from ldp_telemetry.shared import TaskConfig, encode_batch
from tests.support.collectors import make_app
from tests.support.reports import envelopes, payloads
from tests.support.servers import ADMIN, bearer

TASKS = [
    {"task_id": "rr", "mechanism": "rr", "epsilon": 1.0, "min_batch_size": 1},
    {
        "task_id": "grr",
        "mechanism": "grr",
        "epsilon": 1.0,
        "domain": ["a", "b", "c"],
        "min_batch_size": 1,
    },
    {"task_id": "cms", "mechanism": "cms", "epsilon": 4.0, "k": 4, "m": 16, "min_batch_size": 1},
    {"task_id": "hcms", "mechanism": "hcms", "epsilon": 4.0, "k": 4, "m": 16, "min_batch_size": 1},
]
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True)
    | st.text(max_size=30)
)
anything = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=12), inner, max_size=5)
    ),
    max_leaves=25,
)
FIELDS = ["report_id", "fingerprint", "time", "bit", "index", "row", "col", "bits"]
reportish = st.dictionaries(st.sampled_from(FIELDS), scalars | st.just("A" * 22), max_size=8)
batches = st.fixed_dictionaries({"reports": st.lists(reportish | anything, max_size=5)})
times = st.integers(-(2**64), 2**64) | st.just(0)
queries = st.fixed_dictionaries(
    {},
    optional={
        "candidates": st.lists(st.text(max_size=8) | st.sampled_from(["a", "b"]), max_size=6)
        | anything,
        "start": times | anything,
        "end": times | anything,
        "level": st.floats(allow_nan=True) | anything,
    },
) | st.dictionaries(st.text(max_size=10), anything, max_size=3)
task_params = st.dictionaries(
    st.sampled_from(
        [
            "task_id",
            "mechanism",
            "epsilon",
            "alpha",
            "beta",
            "k",
            "m",
            "domain",
            "hash_seed",
            "time_precision",
            "min_batch_size",
            "upload_key_required",
        ]
    ),
    anything | st.sampled_from(["rr", "grr", "cms", "hcms"]),
    max_size=8,
)


@pytest.fixture(scope="module")
def fuzz_client(tmp_path_factory: pytest.TempPathFactory) -> FlaskClient:
    app = make_app(str(tmp_path_factory.mktemp("fuzz") / "fuzz.sqlite3"))
    client = app.test_client()
    rng = np.random.default_rng(8)
    for params in TASKS:  # with a few reports each, so that estimates run the estimator
        created = client.post("/v1/tasks", json=params, headers=bearer(ADMIN))
        task = TaskConfig.from_dict(created.get_json())
        values = [True, False] * 5 if task.mechanism == "rr" else ["a", "b", "c"] * 4
        body = encode_batch(task, envelopes(task, payloads(task, values, rng)))
        answer = client.post(
            f"/v1/tasks/{task.task_id}/reports", data=body, content_type="application/json"
        )
        assert answer.get_json()["accepted"] == len(values)
    return client


def post(client: FlaskClient, path: str, body: Any) -> None:
    data = json.dumps(body, allow_nan=True)
    response = client.post(path, data=data, content_type="application/json", headers=bearer(ADMIN))
    assert response.status_code < 500, response.get_data(as_text=True)
    if response.status_code >= 400:
        assert response.mimetype == "application/problem+json"
        assert set(response.get_json()) >= {"type", "title", "status", "detail"}


@settings(max_examples=150, deadline=None)
@given(task=st.sampled_from([t["task_id"] for t in TASKS]), body=batches | anything)
def test_reports_never_fail(fuzz_client: FlaskClient, task: str, body: Any) -> None:
    post(fuzz_client, f"/v1/tasks/{task}/reports", body)


@settings(max_examples=100, deadline=None)
@given(task=st.sampled_from([t["task_id"] for t in TASKS]), body=queries | anything)
def test_estimates_never_fail(fuzz_client: FlaskClient, task: str, body: Any) -> None:
    post(fuzz_client, f"/v1/tasks/{task}/estimates", body)


@settings(max_examples=150, deadline=None)
@given(body=task_params | anything)
def test_task_creation_never_fails(fuzz_client: FlaskClient, body: Any) -> None:
    post(fuzz_client, "/v1/tasks", body)
