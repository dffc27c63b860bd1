"""Sealed tasks at the collector: keys, the served key and its ETag, per-report reasons.

In process (Flask's test client) on a fresh SQLite file and key file per test; the HTTP
path with the real SDK and the shuffler is tests/shuffler/test_sealed.py.
"""

from __future__ import annotations

import json
import stat
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from flask import Flask
from flask.testing import FlaskClient

from ldp_telemetry.aggregator import create_app
from ldp_telemetry.aggregator.cli import main
from ldp_telemetry.aggregator.core import sealing_keys
from ldp_telemetry.aggregator.core.sealing_keys import add_key, read_keys, retire_key
from ldp_telemetry.shared import TaskConfig
from ldp_telemetry.shared.codec import Envelope, encode_report, new_report_id
from ldp_telemetry.shared.wire import b64decode, b64encode
from tests.support.collectors import make_app
from tests.support.servers import ADMIN, ANALYST, bearer

TASK = {"task_id": "sealed", "mechanism": "rr", "epsilon": 2.0, "min_batch_size": 1}


@pytest.fixture(autouse=True)
def _reload_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sealing_keys, "RELOAD_EVERY", 0.0)  # see a rotation at once


@pytest.fixture
def keys(tmp_path: Path) -> Path:
    return tmp_path / "seal-keys.json"


@pytest.fixture
def app(tmp_path: Path, keys: Path) -> Flask:
    return make_app(str(tmp_path / "test.sqlite3"), SEAL_KEYS=str(keys))


def _create(client: FlaskClient) -> Any:
    return client.post("/v1/tasks", json={**TASK, "sealed": True}, headers=bearer(ADMIN))


def _served(client: FlaskClient) -> TaskConfig:
    answer = client.get("/v1/tasks/sealed")
    assert answer.status_code == 200
    return TaskConfig.from_dict(answer.json)


def _report(task: TaskConfig, bit: bool = True, **changes: Any) -> dict[str, Any]:
    envelope = Envelope(new_report_id(), task.fingerprint, task.floor_time(time.time()), bit)
    return {**encode_report(task, envelope), **changes}


def _upload(client: FlaskClient, *reports: dict[str, Any]) -> dict[str, Any]:
    answer = client.post("/v1/tasks/sealed/reports", json={"reports": list(reports)})
    assert answer.status_code == 200, answer.json
    body: dict[str, Any] = answer.json
    return body


def _reasons(answer: dict[str, Any]) -> list[str]:
    return [r["reason"] for r in answer["rejected"]]


def _n(client: FlaskClient) -> int:
    answer = client.post("/v1/tasks/sealed/estimates", json={}, headers=bearer(ANALYST))
    assert answer.status_code == 200, answer.json
    return int(answer.json["n"])


def test_a_sealed_task_needs_a_key_and_serves_it(client: FlaskClient, keys: Path) -> None:
    refused = _create(client)
    assert refused.status_code == 400 and "keys new" in refused.json["detail"]
    first = add_key(keys)
    created = _create(client)
    assert created.status_code == 201, created.json
    assert created.json["sealed"] is True and created.json["seal"]["key_id"] == first.key_id
    answer = client.get("/v1/tasks/sealed")
    assert answer.headers["ETag"] == f'"{answer.json["fingerprint"]}.{first.key_id}"'
    assert (
        client.get(
            "/v1/tasks/sealed", headers={"If-None-Match": answer.headers["ETag"]}
        ).status_code
        == 304
    )
    listed = client.get("/v1/tasks")
    second = add_key(keys)  # a rotation reaches devices that revalidate
    again = client.get("/v1/tasks/sealed", headers={"If-None-Match": answer.headers["ETag"]})
    assert again.status_code == 200 and again.json["seal"]["key_id"] == second.key_id
    assert again.json["fingerprint"] == answer.json["fingerprint"]  # the same task
    assert client.get("/v1/tasks").headers["ETag"] != listed.headers["ETag"]


def test_every_refusal_has_its_reason_and_the_rest_count_once(
    client: FlaskClient, keys: Path
) -> None:
    add_key(keys)
    assert _create(client).status_code == 201
    task = _served(client)
    good = [_report(task) for _ in range(3)]
    moved = {**_report(task), "report_id": b64encode(bytes(16))}  # replayed under another id
    raw = bytearray(b64decode(good[0]["sealed"], len(good[0]["sealed"]) * 3 // 4, "sealed"))
    raw[-1] ^= 1
    tampered = {**_report(task), "sealed": b64encode(bytes(raw))}
    unknown = {**_report(task), "key_id": "not-a-key"}
    plain = TaskConfig(**TASK)  # the same task, unsealed
    unsealed = encode_report(
        plain, Envelope(new_report_id(), task.fingerprint, good[0]["time"], True)
    )
    answer = _upload(client, *good, moved, tampered, unknown, unsealed)
    assert answer["accepted"] == 3
    assert _reasons(answer) == [
        "sealed_invalid",
        "sealed_invalid",
        "unknown_seal_key",
        "invalid_message",
    ]
    again = _upload(client, *good)  # a device's retry: the same bytes
    assert again["accepted"] == 0 and set(_reasons(again)) == {"report_replayed"}
    assert _n(client) == 3


def test_a_sealer_that_pads_otherwise_is_refused_sealed_padding(
    client: FlaskClient, keys: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """§10 (1.1): the ciphertext's length is the relay's view of the payload; a report
    whose plaintext is not the rule's length is refused alone, with its reason."""
    from ldp_telemetry.shared import sealing

    add_key(keys)
    assert _create(client).status_code == 201
    task = _served(client)
    good = _report(task)
    monkeypatch.setattr(sealing, "padded", lambda payload: json.dumps(payload).encode())
    unpadded = _report(task)  # '{"bit": 1}': its length tells the relay the bit's width
    answer = _upload(client, good, unpadded)
    assert answer["accepted"] == 1 and _reasons(answer) == ["sealed_padding"]
    assert _n(client) == 1


def test_rotation_keeps_the_old_key_opening_until_it_is_retired(
    client: FlaskClient, keys: Path
) -> None:
    old = add_key(keys)
    assert _create(client).status_code == 201
    under_old = _served(client)
    new = add_key(keys)
    under_new = _served(client)
    assert under_new.seal is not None and under_new.seal.key_id == new.key_id
    assert _upload(client, _report(under_old), _report(under_new))["accepted"] == 2
    with pytest.raises(ValueError, match="acceptance window"):
        retire_key(keys, old.key_id, min_age=7 * 86_400)
    with pytest.raises(ValueError, match="current key"):
        retire_key(keys, new.key_id, min_age=0)
    retire_key(keys, old.key_id, min_age=0)
    late = _upload(client, _report(under_old), _report(under_new))
    assert late["accepted"] == 1 and _reasons(late) == ["unknown_seal_key"]
    assert _n(client) == 3


def test_an_unreadable_key_file_keeps_the_keys_already_read(
    client: FlaskClient, keys: Path
) -> None:
    add_key(keys)
    assert _create(client).status_code == 201
    task = _served(client)
    keys.write_text("{not json")
    assert _upload(client, _report(task))["accepted"] == 1  # logged, not a 500
    assert client.get("/v1/tasks/sealed").json["seal"]["key_id"] == task.seal.key_id


def test_the_keys_command(tmp_path: Path) -> None:
    runner = CliRunner()
    db, keys = str(tmp_path / "cli.sqlite3"), str(tmp_path / "keys" / "seal-keys.json")
    base = ["--db", db, "keys"]
    first = runner.invoke(main, [*base, "new", "--keys", keys])
    second = runner.invoke(main, [*base, "new", "--keys", keys])
    assert first.exit_code == second.exit_code == 0, first.output
    assert stat.S_IMODE(Path(keys).stat().st_mode) == 0o600
    listed = runner.invoke(main, [*base, "list", "--keys", keys, "--format", "json"])
    rows = json.loads(listed.output)
    assert [r["key_id"] for r in rows] == [first.output.strip(), second.output.strip()]
    assert [r["state"] for r in rows] == ["opening", "current"]
    assert "private" not in listed.output
    early = runner.invoke(main, [*base, "retire", "--keys", keys, rows[0]["key_id"]])
    assert early.exit_code != 0 and "acceptance window" in early.output
    current = runner.invoke(main, [*base, "retire", "--keys", keys, "--now", rows[1]["key_id"]])
    assert current.exit_code != 0 and "current key" in current.output
    done = runner.invoke(main, [*base, "retire", "--keys", keys, "--now", rows[0]["key_id"]])
    assert done.exit_code == 0, done.output
    assert [k.key_id for k in read_keys(Path(keys))] == [rows[1]["key_id"]]


def test_tasks_create_sealed_needs_a_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner, db = CliRunner(), str(tmp_path / "cli.sqlite3")
    create = ["--db", db, "tasks", "create", "--task-id", "s", "--mechanism", "rr"]
    create += ["--epsilon", "1", "--sealed"]
    refused = runner.invoke(main, create)
    assert refused.exit_code != 0 and "keys new" in refused.output
    # the default key file sits beside the SQLite database, named after it
    assert runner.invoke(main, ["--db", db, "keys", "new"]).exit_code == 0
    assert (tmp_path / "cli.seal-keys.json").exists()
    created = runner.invoke(main, create)
    assert created.exit_code == 0, created.output
    body = json.loads(created.output)
    assert (
        body["sealed"] is True
        and body["seal"]["key_id"] == read_keys(tmp_path / "cli.seal-keys.json")[0].key_id
    )


@pytest.mark.parametrize("quoted", [False, True])
def test_the_keys_command_reads_ldp_seal_keys_as_serve_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quoted: bool
) -> None:
    keys = tmp_path / "elsewhere.json"
    monkeypatch.setenv("LDP_SEAL_KEYS", json.dumps(str(keys)) if quoted else str(keys))
    runner, db = CliRunner(), str(tmp_path / "cli.sqlite3")
    made = runner.invoke(main, ["--db", db, "keys", "new"])
    assert made.exit_code == 0, made.output
    listed = runner.invoke(main, ["--db", db, "keys", "list", "--format", "json"])
    assert [r["key_id"] for r in json.loads(listed.output)] == [made.output.strip()]
    assert [k.key_id for k in read_keys(keys)] == [made.output.strip()]
    app = create_app({"DATABASE": db})
    assert Path(str(app.config["SEAL_KEYS"])) == keys  # the file serve opens
