"""What an estimate may read is bounded by what it really scans: k · m × buckets."""

from __future__ import annotations

import time

import numpy as np
from flask import Flask

from ldp_telemetry.shared import TaskConfig, encode_batch
from tests.support.reports import envelopes, payloads
from tests.support.servers import ADMIN, ANALYST, bearer

HOUR = 3600


def test_estimates_refuse_a_window_that_reads_more_than_max_estimate_cells(app: Flask) -> None:
    app.config["MAX_ESTIMATE_CELLS"] = 2 * 64 * 256  # two buckets of the task below
    http = app.test_client()
    params = {"mechanism": "cms", "epsilon": 4, "min_batch_size": 1, "time_precision": HOUR}
    too_big = http.post(
        "/v1/tasks", headers=bearer(ADMIN), json={"task_id": "big", "k": 64, "m": 1024, **params}
    )
    assert too_big.status_code == 400 and "MAX_ESTIMATE_CELLS" in too_big.json["detail"]
    created = http.post(
        "/v1/tasks", headers=bearer(ADMIN), json={"task_id": "t", "k": 64, "m": 256, **params}
    )
    assert created.status_code == 201, created.json
    task = TaskConfig.from_dict({k: v for k, v in created.json.items() if k != "archive"})
    now, rng = time.time(), np.random.default_rng(6)
    for hours_ago in (0, 1, 2):  # three stored buckets
        batch = envelopes(task, payloads(task, ["a"] * 5, rng), at=now - hours_ago * HOUR)
        answer = http.post(
            "/v1/tasks/t/reports", data=encode_batch(task, batch), content_type="application/json"
        )
        assert answer.status_code == 200, answer.json

    def ask(**window: int) -> tuple[int, dict]:
        answer = http.post(
            "/v1/tasks/t/estimates", headers=bearer(ANALYST), json={"candidates": ["a"], **window}
        )
        return answer.status_code, answer.json

    status, body = ask()
    assert status == 422 and body["type"].endswith(":query_too_large"), body
    assert body["limit"] == 2 * 64 * 256 and "3 bucket(s)" in body["detail"]
    status, body = ask(start=task.floor_time(now - HOUR))
    assert status == 200 and body["n"] == 10
