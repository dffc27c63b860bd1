"""Helpers of the breakdown tests: create a task over HTTP, upload privatized reports of
known values into chosen slices and buckets, ask an analyst question."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from ldp_telemetry.shared import Envelope, TaskConfig, encode_batch, new_report_id
from tests.support.servers import ADMIN, ANALYST, bearer

PLATFORM = {"name": "platform", "values": ["android", "ios", "web"]}
VERSION = {"name": "app_version", "values": ["5.1", "5.2"]}


def create(client: FlaskClient, **params: Any) -> TaskConfig:
    """Create a task (admin token) and return it as served."""
    made = client.post("/v1/tasks", json=params, headers=bearer(ADMIN))
    assert made.status_code == 201, made.get_json()
    served = made.get_json()
    return TaskConfig.from_dict(
        {k: v for k, v in served.items() if k not in ("upload_key_required", "archive")}
    )


def envelopes(
    task: TaskConfig,
    values: Sequence[Any],
    rng: np.random.Generator,
    dims: dict[str, str] | None = None,
    bucket: int | None = None,
) -> list[Envelope]:
    """Return one privatized report per value, in the slice of ``dims`` and ``bucket``
    (default: the task's current bucket)."""
    index = 0 if dims is None or task.dimensions is None else task.dimensions.slice_of(dims)
    at = task.floor_time(time.time()) if bucket is None else bucket
    batch: Any = task.mechanism_object.privatize_many(list(values), rng)
    payloads = [
        batch.report(i) if hasattr(batch, "report") else batch[i].item() for i in range(len(values))
    ]
    return [Envelope(new_report_id(), task.fingerprint, at, p, index) for p in payloads]


def upload(client: FlaskClient, task: TaskConfig, sent: Sequence[Envelope]) -> None:
    """Upload reports in batches of 1,000; every one must be counted."""
    post(client, task.task_id, bodies(task, sent))


def bodies(task: TaskConfig, sent: Sequence[Envelope]) -> list[bytes]:
    """Return the reports encoded as upload bodies of 1,000 (a test may post them to the
    same task on each backend: encoding is a third of an upload's time)."""
    return [encode_batch(task, sent[start : start + 1_000]) for start in range(0, len(sent), 1_000)]


def post(client: FlaskClient, task_id: str, batches: Sequence[bytes]) -> None:
    """Post upload bodies to a task; every report must be counted."""
    for body in batches:
        answer = client.post(
            f"/v1/tasks/{task_id}/reports", data=body, content_type="application/json"
        )
        assert answer.status_code == 200, answer.get_json()
        assert not answer.get_json()["rejected"], answer.get_json()["rejected"][:3]


def ask(client: FlaskClient, task_id: str, what: str = "estimates", **query: Any) -> TestResponse:
    """POST an analyst question."""
    return client.post(f"/v1/tasks/{task_id}/{what}", json=query, headers=bearer(ANALYST))
