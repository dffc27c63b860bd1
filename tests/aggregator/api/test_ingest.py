"""Through HTTP: replays count once, every malformed body gets its 4xx or its reason."""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import requests

from ldp_telemetry.shared import TaskConfig, encode_batch, encode_report
from tests.support.reports import TIMEOUT, create_task, envelopes, estimates, payloads, post_reports
from tests.support.servers import ADMIN, Server, bearer

DAY = 86_400


@pytest.fixture(scope="module")
def cms(server: Server) -> TaskConfig:
    """A small CMS task on the module's server."""
    return create_task(
        server.url, task_id="ingest-cms", mechanism="cms", epsilon=4.0, k=8, m=20, min_batch_size=1
    )


def one_report(task: TaskConfig, **changes: Any) -> dict[str, Any]:
    """Return a valid report of ``task`` as a JSON object, with fields changed."""
    rng = np.random.default_rng(1)
    report = encode_report(task, envelopes(task, payloads(task, ["x"], rng))[0])
    report.update(changes)
    return report


def batch_of(*reports: dict[str, Any]) -> bytes:
    return json.dumps({"reports": list(reports)}).encode()


def test_same_batch_twice_counts_once(server: Server) -> None:
    task = create_task(
        server.url, task_id="replay-rr", mechanism="rr", epsilon=1.0, min_batch_size=1
    )
    body = encode_batch(
        task, envelopes(task, payloads(task, [True] * 40, np.random.default_rng(5)))
    )
    first = post_reports(server.url, task.task_id, body).json()
    again = post_reports(server.url, task.task_id, body, compress=True).json()
    assert (first["accepted"], first["rejected"]) == (40, [])
    assert again["accepted"] == 0
    assert {r["reason"] for r in again["rejected"]} == {"report_replayed"}
    assert len(again["rejected"]) == 40
    assert estimates(server.url, task.task_id).json()["n"] == 40


def test_duplicate_id_inside_a_batch_counts_once(server: Server, cms: TaskConfig) -> None:
    report = one_report(cms)
    result = post_reports(server.url, cms.task_id, batch_of(report, report)).json()
    assert result["accepted"] == 1
    assert [(r["report_id"], r["reason"]) for r in result["rejected"]] == [
        (report["report_id"], "report_replayed")
    ]


def gzip_bomb() -> bytes:
    return gzip.compress(b'{"reports": [' + b" " * (64 * 1024 * 1024) + b"]}", 9)


BatchCase = tuple[Callable[[TaskConfig], bytes], dict[str, str], int, str]
BATCH_PROBLEMS: dict[str, BatchCase] = {
    "not json": (lambda t: b'{"reports": [', {}, 400, "invalid_json"),
    "not utf-8": (lambda t: b'{"reports": ["\xff"]}', {}, 400, "invalid_json"),
    "reports not a list": (lambda t: b'{"reports": {"a": 1}}', {}, 400, "invalid_batch"),
    "batch is a list": (lambda t: b"[1, 2]", {}, 400, "invalid_batch"),
    "empty batch": (lambda t: b'{"reports": []}', {}, 400, "invalid_batch"),
    "extra batch field": (lambda t: b'{"reports": [{}], "x": 1}', {}, 400, "invalid_batch"),
    "huge body": (
        lambda t: b'{"reports": ["' + b"a" * (5 << 20) + b'"]}',
        {},
        413,
        "body_too_large",
    ),
    "gzip bomb": (lambda t: gzip_bomb(), {"Content-Encoding": "gzip"}, 413, "body_too_large"),
    "broken gzip": (
        lambda t: b"\x1f\x8b\x08garbage",
        {"Content-Encoding": "gzip"},
        400,
        "invalid_gzip",
    ),
    "unknown encoding": (
        lambda t: b"{}",
        {"Content-Encoding": "br"},
        415,
        "unsupported_media_type",
    ),
    "form content type": (
        lambda t: b"reports=1",
        {"Content-Type": "application/x-www-form-urlencoded"},
        415,
        "unsupported_media_type",
    ),
    "too many reports": (lambda t: batch_of(*[{}] * 5001), {}, 413, "too_many_reports"),
}


@pytest.mark.parametrize("case", sorted(BATCH_PROBLEMS))
def test_malformed_batches_get_a_problem(server: Server, cms: TaskConfig, case: str) -> None:
    make, headers, status, code = BATCH_PROBLEMS[case]
    response = requests.post(
        f"{server.url}/v1/tasks/{cms.task_id}/reports",
        data=make(cms),
        headers={"Content-Type": "application/json", **headers},
        timeout=TIMEOUT,
    )
    assert response.status_code == status, response.text
    assert response.headers["Content-Type"] == "application/problem+json"
    problem = response.json()
    assert problem["type"] == f"urn:ldp-telemetry:problem:{code}"
    assert problem["status"] == status and problem["detail"]


def test_unknown_task_is_404(server: Server, cms: TaskConfig) -> None:
    response = post_reports(server.url, "no-such-task", batch_of(one_report(cms)))
    assert response.status_code == 404
    assert response.json()["type"].endswith(":unknown_task")


def now_bucket() -> int:
    return int(time.time()) // DAY * DAY


REPORT_PROBLEMS: dict[str, tuple[dict[str, Any], str]] = {
    "wrong fingerprint": ({"fingerprint": "0" * 32}, "outdated_config"),
    "wrong bit length": ({"bits": "AAAAAAA"}, "invalid_message"),
    "nonzero padding bits": ({"bits": "AAD_"}, "invalid_message"),
    "row out of range": ({"row": 8}, "invalid_message"),
    "row is a string": ({"row": "3"}, "invalid_message"),
    "row is a bool": ({"row": True}, "invalid_message"),
    "short report id": ({"report_id": "AAAA"}, "invalid_message"),
    "time not floored": ({"time": now_bucket() + 1}, "invalid_message"),
    "time in the future": ({"time": now_bucket() + 2 * DAY}, "report_too_early"),
    "time too old": ({"time": now_bucket() - 30 * DAY}, "report_expired"),
    "hcms field on cms": ({"col": 1}, "invalid_message"),
}


@pytest.mark.parametrize("case", sorted(REPORT_PROBLEMS))
def test_malformed_reports_are_rejected_with_a_reason(
    server: Server, cms: TaskConfig, case: str
) -> None:
    changes, reason = REPORT_PROBLEMS[case]
    good, bad = one_report(cms), one_report(cms, **changes)
    result = post_reports(server.url, cms.task_id, batch_of(good, bad)).json()
    assert result["accepted"] == 1
    assert len(result["rejected"]) == 1
    rejection = result["rejected"][0]
    assert rejection["reason"] == reason and rejection["message"]
    if "report_id" not in changes:
        assert rejection["report_id"] == bad["report_id"]


def test_upload_key_is_required_when_the_task_asks(server: Server) -> None:
    response = requests.post(
        f"{server.url}/v1/tasks",
        headers=bearer(ADMIN),
        timeout=TIMEOUT,
        json={"task_id": "keyed", "mechanism": "rr", "epsilon": 1.0, "upload_key_required": True},
    )
    key = response.json().pop("upload_key")
    task = TaskConfig.from_dict({k: v for k, v in response.json().items() if k != "upload_key"})
    body = encode_batch(task, envelopes(task, [1, 0]))
    assert post_reports(server.url, "keyed", body).status_code == 401
    assert post_reports(server.url, "keyed", body, headers=bearer("guess")).status_code == 401
    assert post_reports(server.url, "keyed", body, headers=bearer(key)).json()["accepted"] == 2


def test_metrics_count_accepted_and_rejected_by_reason(server: Server, cms: TaskConfig) -> None:
    post_reports(
        server.url,
        cms.task_id,
        batch_of(one_report(cms), one_report(cms, time=now_bucket() + 2 * DAY)),
    )
    text = requests.get(f"{server.url}/metrics", timeout=TIMEOUT).text
    assert 'ldp_reports_accepted_total{task_id="ingest-cms"}' in text
    assert 'ldp_reports_rejected_total{reason="report_too_early"}' in text
