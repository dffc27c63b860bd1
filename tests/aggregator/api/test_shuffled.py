"""The collector's side of shuffling, on every backend: shuffled batches and central ε.

A shuffler token may PUT a batch (and nothing else); the batch is counted like an upload
and recorded once per id; estimates answer the central ε of the smallest batch, or why
there is none.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
from flask import Flask
from flask.testing import FlaskClient

from ldp_telemetry.aggregator.api.resources import get_store_of
from ldp_telemetry.aggregator.core.auth import hash_token
from ldp_telemetry.shared import Envelope, TaskConfig, encode_batch, new_report_id
from ldp_telemetry.shared.shuffling.accountant import central_epsilon
from ldp_telemetry.shared.shuffling.amplification import reduction_of
from ldp_telemetry.shared.wire import b64encode
from tests.support.servers import ADMIN, ANALYST, bearer

SHUFFLER = "shuffler-test-token"


@pytest.fixture
def shuffler_client(app: Flask, client: FlaskClient) -> FlaskClient:
    get_store_of(app).add_token(hash_token(SHUFFLER), "shuffler")
    return client


def make_task(client: FlaskClient, **extra: Any) -> TaskConfig:
    fields = {"task_id": "t", "mechanism": "rr", "epsilon": 2.0, "min_batch_size": 1, **extra}
    answer = client.post("/v1/tasks", json=fields, headers=bearer(ADMIN))
    assert answer.status_code == 201, answer.get_json()
    body = answer.get_json()
    body.pop("upload_key", None)
    body.pop("archive", None)
    return TaskConfig.from_dict(body)


def batch(task: TaskConfig, count: int) -> bytes:
    bits = np.random.default_rng(count).integers(0, 2, count)
    bucket = task.floor_time(time.time())
    return encode_batch(
        task, [Envelope(new_report_id(), task.fingerprint, bucket, int(b)) for b in bits]
    )


def put(
    client: FlaskClient, body: bytes, batch_id: bytes, uploads: int, token: str = SHUFFLER
) -> Any:
    return client.put(
        f"/v1/tasks/t/shuffled/{b64encode(batch_id)}?uploads={uploads}",
        data=body,
        headers={**bearer(token), "Content-Type": "application/json"},
    )


def central(client: FlaskClient) -> dict[str, Any]:
    answer = client.post("/v1/tasks/t/estimates", json={}, headers=bearer(ANALYST))
    assert answer.status_code == 200, answer.get_json()
    return answer.get_json()


def test_only_a_shuffler_token_may_put_a_batch(shuffler_client: FlaskClient) -> None:
    task = make_task(shuffler_client)
    body = batch(task, 3)
    assert put(shuffler_client, body, b"\x01" * 16, 3, token=ANALYST).status_code == 403
    assert put(shuffler_client, body, b"\x01" * 16, 3, token=ADMIN).status_code == 403
    assert put(shuffler_client, body, b"\x01" * 16, 3, token="nope").status_code == 401
    # and a shuffler token is no analyst's
    refused = shuffler_client.post("/v1/tasks/t/estimates", json={}, headers=bearer(SHUFFLER))
    assert refused.status_code == 403
    assert refused.get_json()["detail"].startswith("a shuffler token cannot do this; use an ")
    by_analyst = put(shuffler_client, body, b"\x01" * 16, 3, token=ANALYST).get_json()
    assert by_analyst["detail"] == "an analyst token cannot do this; use a shuffler token"


def test_a_bad_batch_id_or_size_is_a_400(shuffler_client: FlaskClient) -> None:
    task = make_task(shuffler_client)
    body = batch(task, 3)
    assert put(shuffler_client, body, b"\x01" * 15, 3).status_code == 400
    assert put(shuffler_client, body, b"\x01" * 16, 0).status_code == 400


def test_upload_key_is_not_asked_of_the_shuffler(shuffler_client: FlaskClient) -> None:
    task = make_task(shuffler_client, upload_key_required=True)
    answer = put(shuffler_client, batch(task, 4), b"\x02" * 16, 4)
    assert answer.status_code == 200 and answer.get_json()["accepted"] == 4


def test_a_resent_batch_counts_once_and_gives_central_epsilon(
    shuffler_client: FlaskClient,
) -> None:
    task = make_task(shuffler_client)
    body = batch(task, 1000)
    first = put(shuffler_client, body, b"\x03" * 16, 900)
    again = put(shuffler_client, body, b"\x03" * 16, 900)
    assert first.get_json()["accepted"] == 1000 and again.get_json()["accepted"] == 0
    smaller = put(shuffler_client, batch(task, 600), b"\x04" * 16, 600)
    assert smaller.get_json()["accepted"] == 600
    answer = central(shuffler_client)
    assert answer["n"] == 1600
    assert answer["smallest_batch"] == 600 and answer["delta"] == 1e-8
    expected = central_epsilon(reduction_of(task.mechanism_object), 600, 1e-8)
    assert answer["central_epsilon"] == pytest.approx(expected)
    assert answer["central_epsilon"] < answer["effective_epsilon"]


def test_reports_that_bypassed_the_shuffler_void_central_epsilon(
    shuffler_client: FlaskClient,
) -> None:
    task = make_task(shuffler_client)
    put(shuffler_client, batch(task, 20), b"\x05" * 16, 20)
    direct = shuffler_client.post(
        "/v1/tasks/t/reports", data=batch(task, 2), headers={"Content-Type": "application/json"}
    )
    assert direct.status_code == 200
    answer = central(shuffler_client)
    assert answer["central_epsilon"] is None
    assert "2 of the 22 reports" in answer["central_epsilon_reason"]


def test_no_shuffled_batch_says_so(shuffler_client: FlaskClient) -> None:
    task = make_task(shuffler_client)
    shuffler_client.post(
        "/v1/tasks/t/reports", data=batch(task, 5), headers={"Content-Type": "application/json"}
    )
    answer = central(shuffler_client)
    assert answer["central_epsilon"] is None and answer["smallest_batch"] is None
    assert "no shuffled batch is recorded" in answer["central_epsilon_reason"]


def test_heavy_hitters_answer_the_same_central_epsilon_as_estimates(
    shuffler_client: FlaskClient,
) -> None:
    task = make_task(
        shuffler_client, mechanism="hh", epsilon=4.0, k=8, m=64, alphabet="ab", max_length=2
    )
    rng = np.random.default_rng(5)
    values = ["ab"] * 300
    privatized = task.mechanism_object.privatize_many(
        values, rng, levels=np.zeros(len(values), dtype=np.int64)
    )
    bucket = task.floor_time(time.time())
    body = encode_batch(
        task,
        [
            Envelope(new_report_id(), task.fingerprint, bucket, privatized.report(i))
            for i in range(len(values))
        ],
    )
    assert put(shuffler_client, body, b"\x06" * 16, 300).get_json()["accepted"] == 300
    estimated = shuffler_client.post(
        "/v1/tasks/t/estimates", json={"candidates": ["ab"]}, headers=bearer(ANALYST)
    ).get_json()
    found = shuffler_client.post(
        "/v1/tasks/t/heavy-hitters", json={"top": 2}, headers=bearer(ANALYST)
    ).get_json()
    assert estimated["central_epsilon"] is not None
    for field in ("central_epsilon", "delta", "smallest_batch"):
        assert found[field] == estimated[field], field
