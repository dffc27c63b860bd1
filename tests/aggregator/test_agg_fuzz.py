"""No input gets a 500: arbitrary JSON posted to every endpoint that takes a body."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import ADMIN, ANALYST, bearer
from flask.testing import FlaskClient
from hypothesis import given, settings
from hypothesis import strategies as st

from aggregator import create_app

TASKS = [
    {"task_id": "rr", "mechanism": "rr", "epsilon": 1.0, "min_batch_size": 1},
    {"task_id": "grr", "mechanism": "grr", "epsilon": 1.0, "domain": ["a", "b", "c"],
     "min_batch_size": 1},
    {"task_id": "cms", "mechanism": "cms", "epsilon": 4.0, "k": 4, "m": 16, "min_batch_size": 1},
    {"task_id": "hcms", "mechanism": "hcms", "epsilon": 4.0, "k": 4, "m": 16,
     "min_batch_size": 1},
]
scalars = (st.none() | st.booleans() | st.integers(-(2**70), 2**70)
           | st.floats(allow_nan=True) | st.text(max_size=30))
anything = st.recursive(scalars, lambda inner: st.lists(inner, max_size=5)
                        | st.dictionaries(st.text(max_size=12), inner, max_size=5),
                        max_leaves=25)
FIELDS = ["report_id", "fingerprint", "time", "bit", "index", "row", "col", "bits"]
reportish = st.dictionaries(st.sampled_from(FIELDS), scalars | st.just("A" * 22), max_size=8)
batches = st.fixed_dictionaries({"reports": st.lists(reportish | anything, max_size=5)})
queries = st.dictionaries(st.sampled_from(["candidates", "start", "end", "level", "x"]),
                          anything, max_size=4)
task_params = st.dictionaries(
    st.sampled_from(["task_id", "mechanism", "epsilon", "alpha", "beta", "k", "m", "domain",
                     "hash_seed", "time_precision", "min_batch_size", "upload_key_required"]),
    anything | st.sampled_from(["rr", "grr", "cms", "hcms"]), max_size=8)


@pytest.fixture(scope="module")
def fuzz_client(tmp_path_factory: pytest.TempPathFactory) -> FlaskClient:
    app = create_app({"TESTING": True, "ADMIN_TOKEN": ADMIN, "ANALYST_TOKEN": ANALYST,
                      "DATABASE": str(tmp_path_factory.mktemp("fuzz") / "fuzz.sqlite3")})
    client = app.test_client()
    for params in TASKS:
        assert client.post("/v1/tasks", json=params, headers=bearer(ADMIN)).status_code == 201
    return client


def post(client: FlaskClient, path: str, body: Any) -> None:
    data = json.dumps(body, allow_nan=True)
    response = client.post(path, data=data, content_type="application/json",
                           headers=bearer(ADMIN))
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
