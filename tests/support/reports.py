"""Tasks and estimates over HTTP, and privatized batches from shared/: what tests send."""

from __future__ import annotations

import gzip
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import requests

from ldp_telemetry.shared import Envelope, TaskConfig, encode_batch, new_report_id
from ldp_telemetry.shared.codec import Payload
from tests.support.servers import ADMIN, ANALYST, bearer

TIMEOUT = 30


def create_task_json(url: str, **params: Any) -> dict[str, Any]:
    """Create a task over HTTP (admin token) and return it as the collector served it."""
    response = requests.post(f"{url}/v1/tasks", json=params, headers=bearer(ADMIN), timeout=TIMEOUT)
    assert response.status_code == 201, response.text
    served: dict[str, Any] = response.json()
    return served


def create_task(url: str, **params: Any) -> TaskConfig:
    """Create a task over HTTP and return its configuration."""
    body = create_task_json(url, **params)
    body.pop("upload_key", None)
    body.pop("archive", None)
    return TaskConfig.from_dict(body)


def payloads(task: TaskConfig, values: Sequence[Any], rng: np.random.Generator) -> list[Payload]:
    """Return the privatized payloads of values (vectorized privatize_many)."""
    batch = task.mechanism_object.privatize_many(values, rng)
    if task.mechanism in ("cms", "hcms"):
        return [batch.report(i) for i in range(len(values))]
    return [int(x) for x in batch]


def envelopes(
    task: TaskConfig, reports: Sequence[Payload], at: float | None = None
) -> list[Envelope]:
    """Wrap payloads in envelopes with fresh ids, in the bucket of ``at`` (default now)."""
    bucket = task.floor_time(time.time() if at is None else at)
    return [Envelope(new_report_id(), task.fingerprint, bucket, p) for p in reports]


def post_reports(
    url: str,
    task_id: str,
    body: bytes,
    *,
    compress: bool = False,
    headers: dict[str, str] | None = None,
) -> requests.Response:
    """POST a batch body (optionally gzipped) to a task."""
    sent = {"Content-Type": "application/json", **(headers or {})}
    if compress:
        body = gzip.compress(body)
        sent["Content-Encoding"] = "gzip"
    return requests.post(
        f"{url}/v1/tasks/{task_id}/reports", data=body, headers=sent, timeout=TIMEOUT
    )


def upload(url: str, task: TaskConfig, batch: Sequence[Envelope], size: int = 500) -> int:
    """Upload envelopes in batches of ``size``; return how many were accepted."""
    accepted = 0
    for start in range(0, len(batch), size):
        body = encode_batch(task, batch[start : start + size])
        response = post_reports(url, task.task_id, body, compress=start % 1000 == 0)
        assert response.status_code == 200, response.text
        accepted += response.json()["accepted"]
    return accepted


def estimates(url: str, task_id: str, token: str = ANALYST, **query: Any) -> requests.Response:
    """POST an estimates query."""
    return requests.post(
        f"{url}/v1/tasks/{task_id}/estimates", json=query, headers=bearer(token), timeout=TIMEOUT
    )


def estimates_json(url: str, task_id: str, **query: Any) -> dict[str, Any]:
    """Return a task's estimates (analyst token), asserting the collector answered 200."""
    response = requests.post(
        f"{url}/v1/tasks/{task_id}/estimates", json=query, headers=bearer(ANALYST), timeout=60
    )
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer
