"""The app through Flask's test client: tasks, auth, caching, problems, OpenAPI, config."""

from __future__ import annotations

import re
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from ldp_telemetry.aggregator import create_app
from ldp_telemetry.aggregator.core import config
from tests.support.servers import ADMIN, ANALYST, bearer

CMS = {"task_id": "words", "mechanism": "cms", "epsilon": 4.0, "k": 16, "m": 64}


def create(client: FlaskClient, params: dict[str, Any], token: str = ADMIN) -> Any:
    return client.post("/v1/tasks", json=params, headers=bearer(token))


def test_created_task_is_public_and_cacheable(client: FlaskClient) -> None:
    created = create(client, CMS)
    assert created.status_code == 201 and created.headers["Location"] == "/v1/tasks/words"
    task = created.get_json()
    assert isinstance(task["hash_seed"], int) and task["effective_epsilon"] <= 4.0
    fetched = client.get("/v1/tasks/words")
    assert fetched.get_json() == task
    assert fetched.headers["ETag"] == f'"{task["fingerprint"]}"'
    assert fetched.headers["Cache-Control"] == "public, max-age=60"
    again = client.get("/v1/tasks/words", headers={"If-None-Match": fetched.headers["ETag"]})
    assert again.status_code == 304 and again.headers["ETag"] == fetched.headers["ETag"]
    assert client.get("/v1/tasks").get_json() == {"tasks": [task]}


def test_tasks_are_immutable(client: FlaskClient) -> None:
    create(client, CMS)
    response = create(client, {**CMS, "epsilon": 2.0})
    assert response.status_code == 409
    assert response.get_json()["type"].endswith(":task_exists")


@pytest.mark.parametrize(
    ("params", "fix"),
    [
        ({"task_id": "x", "mechanism": "cms", "epsilon": 4.0, "k": 16}, "needs m"),
        ({"task_id": "x", "mechanism": "hcms", "epsilon": 4.0, "k": 16, "m": 100}, "power of two"),
        ({"task_id": "x", "mechanism": "grr", "epsilon": 1.0, "domain": ["a"]}, "2 to"),
        ({"task_id": "bad id!", "mechanism": "rr", "epsilon": 1.0}, "task_id"),
        ({"task_id": "x", "mechanism": "rr", "epsilon": -1}, "epsilon"),
        ({"task_id": "x", "mechanism": "rr", "epsilon": 1.0, "fingerprint": "f"}, "unknown"),
        ({"task_id": "x", "mechanism": "rr", "epsilon": 1.0, "upload_key_required": 1}, "true"),
        # auto chooses k and m itself: a given one was silently replaced by its own
        (
            {"task_id": "x", "mechanism": "auto", "epsilon": 1, "expected_distinct": 10**6, "k": 5},
            "['k']",
        ),
        (
            {"task_id": "x", "mechanism": "auto", "domain": ["a", "b"]}
            | {"longitudinal": {"epsilon_inf": 2, "flip": 0.1}},
            "name the mechanism",
        ),
    ],
)
def test_invalid_task_parameters_say_the_fix(
    client: FlaskClient, params: dict[str, Any], fix: str
) -> None:
    response = create(client, params)
    assert response.status_code == 400
    assert response.get_json()["type"].endswith(":invalid_task")
    assert fix in response.get_json()["detail"]


@pytest.mark.parametrize(
    "headers",
    [
        {},
        bearer("wrong"),
        {"Authorization": "Basic YWRtaW46YWRtaW4="},
        {"Authorization": "Bearer"},
    ],
)
def test_task_creation_and_estimates_need_a_token(
    client: FlaskClient, headers: dict[str, str]
) -> None:
    create(client, {"task_id": "t", "mechanism": "rr", "epsilon": 1.0})
    for path, body in (("/v1/tasks", CMS), ("/v1/tasks/t/estimates", {})):
        response = client.post(path, json=body, headers=headers)
        assert response.status_code == 401
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
        assert response.get_json()["type"].endswith(":unauthorized")
    assert client.get("/v1/tasks/words").status_code == 404  # nothing was created


def test_analyst_token_cannot_create_tasks(client: FlaskClient) -> None:
    response = create(client, CMS, token=ANALYST)
    assert response.status_code == 403
    assert response.get_json()["type"].endswith(":forbidden")


def test_stored_tokens_work_and_only_their_hash_is_kept(sqlite_app: Flask) -> None:
    app = sqlite_app  # the bytes on disk are read: a file
    from ldp_telemetry.aggregator.api.resources import get_store
    from ldp_telemetry.aggregator.core.auth import hash_token

    with app.app_context():
        get_store().add_token(hash_token("db-analyst"), "analyst")
    client = app.test_client()
    create(client, {"task_id": "t", "mechanism": "rr", "epsilon": 1.0, "min_batch_size": 1})
    response = client.post("/v1/tasks/t/estimates", json={}, headers=bearer("db-analyst"))
    assert response.status_code == 422  # authorized; no reports yet
    database = Path(app.config["DATABASE"])
    stored = b"".join(p.read_bytes() for p in database.parent.glob(database.name + "*"))
    assert b"db-analyst" not in stored and hash_token("db-analyst").encode() in stored


def test_unknown_routes_and_methods_are_problems(client: FlaskClient) -> None:
    missing = client.get("/nowhere")
    assert missing.status_code == 404 and missing.mimetype == "application/problem+json"
    wrong = client.delete("/v1/tasks")
    assert wrong.status_code == 405 and wrong.get_json()["type"].endswith(":method_not_allowed")


def test_openapi_lists_exactly_the_routes(app: Flask, client: FlaskClient) -> None:
    document = client.get("/v1/openapi.json").get_json()
    documented = {
        (path, method.upper()) for path, item in document["paths"].items() for method in item
    }
    routed = {
        (re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule.rule), method)
        for rule in app.url_map.iter_rules()
        # The dashboard's HTML pages are not part of the JSON API (README: Dashboard).
        if rule.endpoint != "static" and not rule.endpoint.startswith("dashboard.")
        for method in rule.methods - {"HEAD", "OPTIONS"}
    }
    assert documented == routed


def test_ops_endpoints(client: FlaskClient) -> None:
    assert client.get("/healthz").get_json() == {"status": "ok"}
    assert client.get("/readyz").get_json() == {"status": "ready"}
    metrics = client.get("/metrics")
    assert metrics.status_code == 200 and b"ldp_reports_rejected_total" in metrics.data


def test_configuration_layers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LDP_MAX_REPORTS_PER_BATCH", "7")
    monkeypatch.setenv("LDP_ADMIN_TOKEN", "12345")  # JSON-parsed to an int, kept a str
    app = create_app({"DATABASE": str(tmp_path / "x.sqlite3"), "CLOCK_SKEW": 5})
    assert app.config["MAX_REPORTS_PER_BATCH"] == 7 and app.config["CLOCK_SKEW"] == 5
    assert app.config["ADMIN_TOKEN"] == "12345"
    assert create(app.test_client(), CMS, token="12345").status_code == 201


def test_default_database_is_in_the_instance_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("LDP_DATABASE", raising=False)
    monkeypatch.setattr(config, "instance_folder", lambda: str(tmp_path / "inst"))
    app = create_app()
    assert app.config["DATABASE"] == str(tmp_path / "inst" / "ldp-aggregator.sqlite3")
    assert Path(app.config["DATABASE"]).is_file()


def test_a_locked_database_answers_503_with_retry_after(tmp_path: Path) -> None:
    database = tmp_path / "locked.sqlite3"
    app = create_app({"DATABASE": str(database), "ADMIN_TOKEN": ADMIN, "SQLITE_BUSY_TIMEOUT": 0.05})
    client = app.test_client()
    task = create(client, {"task_id": "t", "mechanism": "rr", "epsilon": 1.0}).get_json()
    report = {
        "report_id": "A" * 22,
        "fingerprint": task["fingerprint"],
        "time": int(time.time()) // 86_400 * 86_400,
        "bit": 1,
    }
    holder = sqlite3.connect(database, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer keeps the lock
    try:
        busy = client.post("/v1/tasks/t/reports", json={"reports": [report]})
        assert busy.status_code == 503 and busy.headers["Retry-After"] == "1"
        assert busy.get_json()["type"].endswith(":unavailable")
        assert client.get("/readyz").status_code == 503
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert client.post("/v1/tasks/t/reports", json={"reports": [report]}).get_json() == {
        "accepted": 1,
        "rejected": [],
    }


def test_public_surface_is_deliberate() -> None:
    from ldp_telemetry import aggregator

    assert aggregator.__all__ == ["create_app"]
