"""A shuffler refuses the uploads a task's upload key would refuse at the collector.

A real collector (subprocess) and the shuffler app in process: the shuffler asks the
collector for the key's SHA-256 with its token and answers 401 as the collector would; when
it cannot ask and knows nothing, 503 with Retry-After (a key it cannot check is not passed).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import requests
from flask import Flask

from ldp_telemetry.shared import Envelope, TaskConfig, encode_batch
from ldp_telemetry.shared.codec import new_report_id
from ldp_telemetry.shuffler.app import create_app
from tests.shuffler.processes import shuffler_token
from tests.support.reports import create_task
from tests.support.servers import ADMIN, Server, bearer

pytestmark = pytest.mark.timeout(120)


def shuffler(collector_process: Server, tmp_path: Path, token: str) -> Flask:
    config = {"SPOOL": str(tmp_path / "spool.sqlite3"), "UPSTREAM": collector_process.url}
    return create_app({**config, "TOKEN": token, "BATCH_MIN": 1000})


def keyed_task(collector_process: Server) -> tuple[TaskConfig, str]:
    """Create an rr task that needs an upload key; return it and the key."""
    fields = {"task_id": "keyed", "mechanism": "rr", "epsilon": 1.0, "min_batch_size": 1}
    answer = requests.post(
        f"{collector_process.url}/v1/tasks",
        json={**fields, "upload_key_required": True},
        headers=bearer(ADMIN),
        timeout=30,
    )
    assert answer.status_code == 201, answer.text
    body = answer.json()
    key = body.pop("upload_key")
    body.pop("archive")
    return TaskConfig.from_dict(body), key


def upload(app: Flask, task: TaskConfig, key: str | None) -> Any:
    report = Envelope(new_report_id(), task.fingerprint, task.floor_time(time.time()), 1)
    headers = {"Content-Type": "application/json", **({} if key is None else bearer(key))}
    return app.test_client().post(
        f"/v1/tasks/{task.task_id}/reports", data=encode_batch(task, [report]), headers=headers
    )


def test_a_keyed_task_takes_only_uploads_with_its_key(
    collector_process: Server, tmp_path: Path
) -> None:
    task, key = keyed_task(collector_process)
    public = create_task(collector_process.url, task_id="public", mechanism="rr", epsilon=1.0)
    app = shuffler(collector_process, tmp_path, shuffler_token(Path(str(collector_process.db))))
    try:
        for wrong in (None, "not-the-key", key + "x"):
            refused = upload(app, task, wrong)
            assert refused.status_code == 401, refused.get_json()
            assert refused.headers["WWW-Authenticate"].startswith("Bearer")
            assert "upload key" in refused.get_json()["detail"]
        assert upload(app, task, key).get_json() == {"accepted": 1, "rejected": []}
        assert upload(app, public, None).status_code == 202  # public tasks need nothing
        assert app.extensions["ldp_shuffler_spool"].pending == 2
    finally:
        app.extensions["ldp_shuffler_forwarder"].stop()


def test_a_key_it_cannot_check_is_not_passed(collector_process: Server, tmp_path: Path) -> None:
    task, key = keyed_task(collector_process)
    token = shuffler_token(Path(str(collector_process.db)))
    app = shuffler(collector_process, tmp_path, token)
    try:
        assert upload(app, task, key).status_code == 202  # learnt while the collector answers
        collector_process.kill()
        assert upload(app, task, None).status_code == 401  # the last answer stands
        assert upload(app, task, key).status_code == 202
    finally:
        app.extensions["ldp_shuffler_forwarder"].stop()
    (tmp_path / "fresh").mkdir()
    fresh = shuffler(collector_process, tmp_path / "fresh", token)  # knows nothing, cannot ask
    try:
        unknown = upload(fresh, task, key)
        assert unknown.status_code == 503, unknown.get_json()
        assert unknown.headers["Retry-After"] == "5"
        assert unknown.get_json()["type"].endswith(":upstream_unavailable")
    finally:
        fresh.extensions["ldp_shuffler_forwarder"].stop()


def test_a_token_that_is_no_shufflers_learns_nothing(collector_process: Server) -> None:
    keyed_task(collector_process)
    url = f"{collector_process.url}/v1/tasks/keyed/upload-key"
    assert requests.get(url, timeout=10).status_code == 401
    assert requests.get(url, headers=bearer(ADMIN), timeout=10).status_code == 403


def test_an_unknown_task_is_refused_not_spooled(collector_process: Server, tmp_path: Path) -> None:
    app = shuffler(collector_process, tmp_path, shuffler_token(Path(str(collector_process.db))))
    ghost = TaskConfig.from_dict({"task_id": "ghost", "mechanism": "rr", "epsilon": 1.0})
    try:
        refused = upload(app, ghost, None)
        assert refused.status_code == 404, refused.get_json()
        assert refused.get_json()["type"].endswith(":unknown_task")
        assert app.extensions["ldp_shuffler_spool"].pending == 0
        # created meanwhile: served once the short memory of "unknown" has passed
        app.extensions["ldp_shuffler_keys"].unknown_ttl = 0.0
        task = create_task(collector_process.url, task_id="ghost", mechanism="rr", epsilon=1.0)
        assert upload(app, task, None).status_code == 202
    finally:
        app.extensions["ldp_shuffler_forwarder"].stop()
