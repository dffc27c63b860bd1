"""Through HTTP: tasks that declare dimensions are created within MAX_SLICES and served as
protocol 1.1 (refusals say why); a report's dims are checked, each bad one refused with its
reason, counted, and the rest of its upload counted."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from ldp_telemetry.aggregator.core.sealing_keys import add_key
from ldp_telemetry.shared import TaskConfig
from ldp_telemetry.shared.codec import Envelope, encode_report, new_report_id
from tests.support.collectors import make_app
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


SLICED = {
    "task_id": "sliced", "mechanism": "rr", "epsilon": 1.0, "min_batch_size": 1,
    "dimensions": [PLATFORM, VERSION],
}  # fmt: skip


def sliced_task(client: FlaskClient, **changes: Any) -> TaskConfig:
    made = create(client, **{**SLICED, **changes})
    assert made.status_code == 201, made.get_json()
    served = made.get_json()
    return TaskConfig.from_dict(
        {k: v for k, v in served.items() if k not in ("upload_key_required", "archive")}
    )


def report(task: TaskConfig, slice_index: int = 0, **changes: Any) -> dict[str, Any]:
    """Return a valid report of ``task`` in a slice, as JSON, with fields changed."""
    envelope = Envelope(new_report_id(), task.fingerprint, task.floor_time(time.time()), True)
    out = encode_report(task, replace(envelope, slice=slice_index))
    for name, value in changes.items():
        if value is DROP:
            out.pop(name)
        else:
            out[name] = value
    return out


DROP = object()


def post(client: FlaskClient, task_id: str, *reports: dict[str, Any]) -> Any:
    body = json.dumps({"reports": list(reports)}).encode()
    answer = client.post(f"/v1/tasks/{task_id}/reports", data=body, content_type="application/json")
    assert answer.status_code == 200, answer.get_json()
    return answer.get_json()


BAD_DIMS: dict[str, tuple[Any, str]] = {
    "no dims": (DROP, "dimensions_missing"),
    "a name absent": ({"platform": "ios"}, "dimensions_missing"),
    "an undeclared name": (
        {"platform": "ios", "app_version": "5.2", "country": "fr"},
        "dimension_undeclared",
    ),
    "a value not in the list": (
        {"platform": "ios", "app_version": "6.0"},
        "dimension_value_unknown",
    ),
    "a value not a string": ({"platform": "ios", "app_version": 5.2}, "dimension_value_unknown"),
    "dims not an object": (["ios", "5.2"], "invalid_message"),
}


def test_each_bad_dims_is_rejected_with_its_reason_and_the_rest_is_counted(
    client: FlaskClient,
) -> None:
    task = sliced_task(client)
    good = [report(task, 5), report(task, 19), report(task, 0)]
    assert good[0]["dims"] == {"platform": "ios", "app_version": "5.1"}
    assert good[1]["dims"] == {"platform": "other", "app_version": "other"}
    bad = [report(task, 5, dims=dims) for dims, _ in BAD_DIMS.values()]
    answer = post(client, task.task_id, good[0], *bad, good[1], good[2])
    assert answer["accepted"] == 3
    assert [(r["report_id"], r["reason"]) for r in answer["rejected"]] == [
        (b["report_id"], reason) for b, (_, reason) in zip(bad, BAD_DIMS.values(), strict=True)
    ]
    metrics = client.get("/metrics").get_data(as_text=True)
    for reason in ("dimensions_missing", "dimension_undeclared", "dimension_value_unknown"):
        assert f'ldp_reports_rejected_total{{reason="{reason}"}}' in metrics


def test_dims_on_a_task_without_dimensions_is_undeclared(client: FlaskClient) -> None:
    plain = sliced_task(client, task_id="plain", dimensions=None)
    assert plain.protocol == "1.0"
    answer = post(
        client,
        "plain",
        report(plain),
        report(plain, dims={"platform": "ios", "app_version": "5.2"}),
        report(plain, dims={}),
    )
    assert answer["accepted"] == 1
    assert [r["reason"] for r in answer["rejected"]] == ["dimension_undeclared"] * 2


def test_a_sealed_reports_dims_are_in_the_clear_and_bound_to_its_ciphertext(
    tmp_path: Path,
) -> None:
    keys = tmp_path / "seal-keys.json"
    add_key(keys)
    client = make_app(str(tmp_path / "test.sqlite3"), SEAL_KEYS=str(keys)).test_client()
    task = sliced_task(client, task_id="sealed", sealed=True)
    sealed = report(task, 6)
    assert sealed.keys() == {"report_id", "fingerprint", "time", "dims", "key_id", "sealed"}
    assert sealed["dims"] == {"platform": "ios", "app_version": "5.2"}
    moved = report(task, 6, dims={"platform": "web", "app_version": "5.2"})  # another slice
    missing = report(task, 6, dims=DROP)
    unknown = report(task, 6, dims={"platform": "ios", "app_version": "9"})
    answer = post(client, "sealed", sealed, moved, missing, unknown)
    assert answer["accepted"] == 1
    assert [r["reason"] for r in answer["rejected"]] == [
        "sealed_invalid",
        "dimensions_missing",
        "dimension_value_unknown",
    ]
