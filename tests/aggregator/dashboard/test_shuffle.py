"""The task page shows the central ε the estimates answer (and a device's over the range's
batches), or why there is none."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from flask import Flask
from flask.testing import FlaskClient

from ldp_telemetry.aggregator.api.resources import get_store_of
from ldp_telemetry.aggregator.core.auth import hash_token
from ldp_telemetry.shared import Envelope, TaskConfig, encode_batch, new_report_id
from ldp_telemetry.shared.wire import b64encode
from tests.aggregator.dashboard.pages import csrf_of
from tests.support.collectors import make_app
from tests.support.servers import ADMIN, ANALYST, bearer

SHUFFLER = "dash-shuffler-token"


@pytest.fixture
def app(tmp_path: Path) -> Flask:
    app = make_app(str(tmp_path / "dash.sqlite3"))
    get_store_of(app).add_token(hash_token(SHUFFLER), "shuffler")
    return app


def upload(
    client: FlaskClient, method: str, path: str, count: int, headers: dict[str, str]
) -> None:
    created = client.get("/v1/tasks/yes").json
    task = TaskConfig.from_dict({k: v for k, v in created.items() if k != "archive"})
    bits = np.random.default_rng(count).integers(0, 2, count)
    bucket = task.floor_time(time.time())
    body = encode_batch(
        task, [Envelope(new_report_id(), task.fingerprint, bucket, int(b)) for b in bits]
    )
    sent = client.open(
        path, method=method, data=body, headers={**headers, "Content-Type": "application/json"}
    )
    assert sent.status_code == 200, sent.text


def page(client: FlaskClient) -> str:
    form = client.get("/dashboard/login")
    client.post("/dashboard/login", data={"token": ANALYST, "csrf_token": csrf_of(form.text)})
    return client.get("/dashboard/tasks/yes").text


@pytest.mark.parametrize("shuffled", [True, False])
def test_task_page_shows_central_epsilon(app: Flask, shuffled: bool) -> None:
    client = app.test_client()
    fields = {"task_id": "yes", "mechanism": "rr", "epsilon": 2.0, "min_batch_size": 10}
    assert client.post("/v1/tasks", json=fields, headers=bearer(ADMIN)).status_code == 201
    if shuffled:
        path = f"/v1/tasks/yes/shuffled/{b64encode(bytes(16))}?uploads=800"
        upload(client, "PUT", path, 800, bearer(SHUFFLER))
    else:
        upload(client, "POST", "/v1/tasks/yes/reports", 50, {})
    answer = client.post("/v1/tasks/yes/estimates", json={}, headers=bearer(ANALYST)).json
    html = page(client)
    if shuffled:
        assert f'data-value="{answer["central_epsilon"]}"' in html
        assert "Central ε over this range" in html
        assert f'data-value="{answer["lifetime"]["epsilon"]}"' in html
        assert "per time bucket of this range (1 batches): central ε" in html
    else:
        assert "No central ε over this range: no shuffled batch is recorded" in html
