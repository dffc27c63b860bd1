"""Protocol 1.0 at the collector's door: LDP-Protocol, media types, BOM, duplicates, and
the task object as served (PROTOCOL.md §1, §2)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from flask import Flask
from flask.testing import FlaskClient

from ldp_telemetry.shared import TaskConfig, encode_batch, encode_report
from tests.support.reports import envelopes, payloads
from tests.support.servers import ADMIN, bearer


@pytest.fixture
def http(sqlite_app: Flask) -> FlaskClient:
    """The collector's Flask app (the real server's fast path reads the same header:
    tests/protocol uploads through it)."""
    return sqlite_app.test_client()


@pytest.fixture
def task(http: FlaskClient) -> TaskConfig:
    spec = {"task_id": "proto-rr", "mechanism": "rr", "epsilon": 1.0}
    created = http.post("/v1/tasks", json=spec, headers=bearer(ADMIN))
    assert created.status_code == 201
    return TaskConfig.from_dict(created.json)


def post_reports(
    http: FlaskClient, task_id: str, raw: bytes, headers: dict[str, str] | None = None
) -> Any:
    sent = {"Content-Type": "application/json", **(headers or {})}
    return http.post(f"/v1/tasks/{task_id}/reports", data=raw, headers=sent)


def body(task: TaskConfig, count: int = 1, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    return encode_batch(task, envelopes(task, payloads(task, [True] * count, rng)))


@pytest.mark.parametrize("version", ["1.0", "1.1", "1.7", " 1.1 ", None])
def test_an_upload_of_protocol_1_is_accepted(
    http: FlaskClient, task: TaskConfig, version: str | None
) -> None:
    """§2 (1.1): any 1.<digits>, and no header at all, is counted like any upload."""
    answer = post_reports(
        http,
        task.task_id,
        body(task, count=3, seed=1),
        headers={} if version is None else {"LDP-Protocol": version},
    )
    assert answer.status_code == 200 and answer.json == {"accepted": 3, "rejected": []}


@pytest.mark.parametrize("version", ["2.0", "0.9", "1", "one", "1.x", "1.1.0"])
def test_an_upload_of_another_protocol_is_refused(
    http: FlaskClient, task: TaskConfig, version: str
) -> None:
    answer = post_reports(http, task.task_id, body(task), headers={"LDP-Protocol": version})
    assert answer.status_code == 400, answer.text
    problem = answer.json
    assert problem["type"].endswith(":unsupported_protocol") and problem["supported"] == [
        "1.0",
        "1.1",
    ]


@pytest.mark.parametrize(
    "content_type", ["application/json; charset=utf-8", "Application/JSON", "application/json;"]
)
def test_media_type_parameters_and_case_are_accepted(
    http: FlaskClient, task: TaskConfig, content_type: str
) -> None:
    answer = post_reports(
        http,
        task.task_id,
        body(task, seed=len(content_type)),
        headers={"Content-Type": content_type},
    )
    assert answer.status_code == 200 and answer.json["accepted"] == 1


@pytest.mark.parametrize(
    "encode", [lambda text: b"\xef\xbb\xbf" + text.encode(), lambda text: text.encode("utf-16")]
)
def test_a_bom_or_utf16_body_is_refused(
    http: FlaskClient, task: TaskConfig, encode: object
) -> None:
    raw = encode(body(task, seed=99).decode())
    answer = post_reports(http, task.task_id, raw)
    assert answer.status_code == 400 and answer.json["type"].endswith(":invalid_json")


def test_the_same_id_twice_in_a_batch_counts_once(http: FlaskClient, task: TaskConfig) -> None:
    one = encode_report(task, envelopes(task, payloads(task, [True], np.random.default_rng(7)))[0])
    answer = post_reports(http, task.task_id, json.dumps({"reports": [one, one]}).encode())
    result = answer.json
    assert result["accepted"] == 1
    assert [r["reason"] for r in result["rejected"]] == ["report_replayed"]


def test_the_task_object_serves_its_policy_and_protocol(http: FlaskClient) -> None:
    spec = {
        "task_id": "proto-keyed",
        "mechanism": "rr",
        "epsilon": 1.0,
        "upload_key_required": True,
    }
    created = http.post("/v1/tasks", json=spec, headers=bearer(ADMIN)).json
    served = http.get("/v1/tasks/proto-keyed").json
    assert served == {k: v for k, v in created.items() if k != "upload_key"}
    assert served["upload_key_required"] is True and served["archive"] is False
    assert served["protocol"] == "1.0" and set(served["derived"]) == {"T_yes", "T_no"}
    assert served in http.get("/v1/tasks").json["tasks"]
