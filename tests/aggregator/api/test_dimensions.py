"""Through HTTP: tasks that declare dimensions are created within MAX_SLICES and served as
protocol 1.1; refusals say why."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from ldp_telemetry.shared import TaskConfig
from tests.support.servers import ADMIN, bearer

PLATFORM = {"name": "platform", "values": ["android", "ios", "web"]}
VERSION = {"name": "app_version", "values": ["5.1", "5.2", "5.3", "5.4"]}


def create(client: FlaskClient, **params: Any) -> Any:
    return client.post("/v1/tasks", json=params, headers=bearer(ADMIN))


def test_a_task_with_dimensions_is_created_and_served_as_1_1(client: FlaskClient) -> None:
    made = create(
        client, task_id="dims", mechanism="grr", epsilon=2.0, domain=["a", "b"],
        dimensions=[PLATFORM, VERSION], min_batch_size=20,
    )  # fmt: skip
    assert made.status_code == 201, made.get_json()
    served = client.get("/v1/tasks/dims").get_json()
    assert served["protocol"] == "1.1"
    assert served["dimensions"] == [PLATFORM, VERSION]
    assert served["min_slice_size"] == 50
    assert (
        TaskConfig.from_dict(
            {k: v for k, v in served.items() if k not in ("upload_key_required", "archive")}
        ).slice_count
        == 20
    )
    auto = create(
        client, task_id="dims-auto", mechanism="auto", epsilon=2.0, domain=["a", "b", "c"],
        dimensions=[PLATFORM], min_slice_size=200,
    )  # fmt: skip
    assert auto.status_code == 201, auto.get_json()
    assert auto.get_json()["min_slice_size"] == 200


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (
            {"dimensions": [PLATFORM, VERSION, {"name": "country", "values": ["fr", "de"]}]},
            "4 × 5 × 3 = 60 slices",
        ),
        ({"dimensions": [PLATFORM], "min_slice_size": 10}, "below the task's min_batch_size"),
        ({"min_slice_size": 100}, "declares dimensions"),
        ({"dimensions": [{"name": "p", "values": ["other"]}]}, "implicit"),
    ],
)
def test_refusals_say_why(client: FlaskClient, params: dict[str, Any], message: str) -> None:
    limit = client.application.config["MAX_SLICES"]
    assert limit == 64
    client.application.config["MAX_SLICES"] = 59
    made = create(client, task_id="refused", mechanism="rr", epsilon=1.0, **params)
    assert made.status_code == 400
    body = made.get_json()
    assert body["type"].endswith("invalid_task")
    assert message in body["detail"]
    if "slices" in message:
        assert "at most 59 (MAX_SLICES)" in body["detail"]
