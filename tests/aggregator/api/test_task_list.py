"""GET /v1/tasks: an ETag that changes exactly when a task is added, and a cheap listing;
estimates whose cost passes the limit are refused before any work."""

from __future__ import annotations

from flask.testing import FlaskClient

from ldp_telemetry.aggregator.api.resources import get_store
from tests.support.servers import ADMIN, ANALYST

AUTH = {"Authorization": f"Bearer {ADMIN}"}


def create(client: FlaskClient, task_id: str) -> None:
    response = client.post(
        "/v1/tasks",
        headers=AUTH,
        json={"task_id": task_id, "mechanism": "cms", "epsilon": 4, "k": 256, "m": 64},
    )
    assert response.status_code == 201, response.json


def test_the_task_list_is_conditional(client: FlaskClient) -> None:
    create(client, "a")
    first = client.get("/v1/tasks")
    etag = first.headers["ETag"]
    assert first.status_code == 200 and [t["task_id"] for t in first.json["tasks"]] == ["a"]
    again = client.get("/v1/tasks", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.headers["ETag"] == etag and not again.data
    create(client, "b")
    changed = client.get("/v1/tasks", headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["ETag"] != etag
    assert [t["task_id"] for t in changed.json["tasks"]] == ["a", "b"]


def test_listing_reuses_the_tasks_already_built(client: FlaskClient) -> None:
    for task_id in ("x", "y"):
        create(client, task_id)
    with client.application.app_context():
        store = get_store()
        first = store.list_tasks()
        assert [a is b for a, b in zip(first, store.list_tasks(), strict=True)] == [True, True]


def test_an_estimate_over_the_work_limit_is_refused_before_any_work(client: FlaskClient) -> None:
    create(client, "big")  # k = 256 rows
    client.application.config["MAX_ESTIMATE_WORK"] = 256 * 100
    headers = {"Authorization": f"Bearer {ANALYST}"}
    refused = client.post(
        "/v1/tasks/big/estimates",
        headers=headers,
        json={"candidates": [f"v{i}" for i in range(101)]},
    )
    assert refused.status_code == 422 and refused.json["type"].endswith(":query_too_large")
    assert refused.json["limit"] == 25_600 and "at most 100 candidates" in refused.json["detail"]
    allowed = client.post(
        "/v1/tasks/big/estimates",
        headers=headers,
        json={"candidates": [f"v{i}" for i in range(100)]},
    )
    assert allowed.status_code == 422 and allowed.json["type"].endswith(":below_min_batch_size")


def test_a_bucket_width_that_opens_too_many_buckets_is_refused(client: FlaskClient) -> None:
    refused = client.post(
        "/v1/tasks",
        headers=AUTH,
        json={"task_id": "fine", "mechanism": "rr", "epsilon": 1, "time_precision": 59},
    )
    assert refused.status_code == 400 and "at least 60 s" in refused.json["detail"]
    accepted = client.post(
        "/v1/tasks",
        headers=AUTH,
        json={"task_id": "fine", "mechanism": "rr", "epsilon": 1, "time_precision": 60},
    )
    assert accepted.status_code == 201


def test_metrics_labels_come_from_closed_sets(client: FlaskClient) -> None:
    for method in ("BREW", "PROPFIND", "X" * 50):
        client.open("/v1/tasks", method=method)
    for path in ("/nope/1", "/nope/2", "/v1/tasks/a/b/c"):
        client.get(path)
    text = client.get("/metrics").get_data(as_text=True)
    assert "BREW" not in text and "PROPFIND" not in text and "/nope" not in text
    assert 'method="other"' in text and 'endpoint="unmatched"' in text
