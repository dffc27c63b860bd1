"""The shuffler's spool and intake without a collector: distinct uploads, batches that
survive a crash with their id, replays, expiry, and backpressure."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import pytest
import requests

from ldp_telemetry.shared.wire import b64encode
from ldp_telemetry.shuffler.app import create_app
from ldp_telemetry.shuffler.spool import BATCH_CLOSE, BATCH_OPEN, Report, Spool


def reports(first: int, count: int, task: str = "t", when: int = 100) -> list[Report]:
    made = []
    for i in range(first, first + count):
        report_id = i.to_bytes(16, "big")
        body = json.dumps({"report_id": b64encode(report_id), "time": when}).encode()
        made.append(Report(report_id, task, when, when + 1000, body))
    return made


def test_ready_counts_distinct_uploads_not_reports(tmp_path: Path) -> None:
    spool = Spool(str(tmp_path / "s.sqlite3"), capacity=10_000)
    spool.add(reports(0, 50))  # one upload of 50 reports hides nobody
    assert spool.ready(3) == []
    spool.add(reports(50, 1))
    spool.add(reports(51, 1))
    assert spool.ready(3) == [("t", 100)]
    assert spool.pending == 52


def test_a_batch_takes_one_report_of_each_upload_first(tmp_path: Path) -> None:
    spool = Spool(str(tmp_path / "s.sqlite3"), capacity=10_000)
    for start in (0, 100, 200, 300):
        spool.add(reports(start, 10))
    batch = spool.claim("t", 100, batch_min=4, batch_max=6)
    assert batch.uploads == 4
    ids = {json.loads(body)["report_id"] for body in spool.bodies(batch)}
    assert len(ids) == 6
    assert spool.pending == 34


def test_a_batch_body_stays_within_the_collectors_body_limit(tmp_path: Path) -> None:
    """Reports of a wide sketch: 3 uploads' worth would exceed the limit, and a batch the
    collector refuses 413 is failed and its acknowledged reports lost."""
    spool = Spool(str(tmp_path / "s.sqlite3"), capacity=10_000)
    for start in (0, 10, 20):
        spool.add(
            [
                replace(r, body=r.body[:-1] + b',"pad":"' + b"x" * 950 + b'"}')
                for r in reports(start, 2)
            ]
        )
    size = len(spool.bodies(spool.claim("t", 100, 1, 1))[0])  # one report's JSON
    limit = len(BATCH_OPEN) + 3 * size + 2 + len(BATCH_CLOSE)  # three reports, two commas
    batch = spool.claim("t", 100, batch_min=3, batch_max=5, max_bytes=limit)
    body = BATCH_OPEN + b",".join(spool.bodies(batch)) + BATCH_CLOSE
    assert len(body) == limit and batch.uploads == 3
    assert spool.claim("t", 100, 3, 5, max_bytes=10).uploads == 1  # never empty
    assert spool.pending == 6 - 1 - 3 - 1


def test_a_claimed_batch_survives_a_restart_with_its_id(tmp_path: Path) -> None:
    path = str(tmp_path / "s.sqlite3")
    spool = Spool(path, capacity=10_000)
    for start in (0, 10, 20):
        spool.add(reports(start, 2))
    batch = spool.claim("t", 100, batch_min=1, batch_max=100)
    reopened = Spool(path, capacity=10_000)  # as after kill -9 before the collector's 2xx
    assert reopened.open_batches() == [batch]
    assert sorted(reopened.bodies(batch)) == sorted(spool.bodies(batch))
    assert reopened.pending == 0
    reopened.settle(batch, "forwarded")
    assert reopened.open_batches() == [] and reopened.bodies(batch) == []


def test_known_ids_are_not_spooled_again(tmp_path: Path) -> None:
    spool = Spool(str(tmp_path / "s.sqlite3"), capacity=10_000)
    assert spool.add(reports(0, 3)) == [True] * 3
    batch = spool.claim("t", 100, batch_min=1, batch_max=100)
    spool.settle(batch, "forwarded")
    again = reports(0, 3) + reports(2, 1) + reports(7, 1)  # forwarded ones, a repeat, a new one
    assert spool.add(again) == [False, False, False, False, True]
    assert spool.pending == 1


def test_prune_drops_waiting_reports_that_expired(tmp_path: Path) -> None:
    spool = Spool(str(tmp_path / "s.sqlite3"), capacity=10_000)
    spool.add(reports(0, 2))
    assert spool.prune(now=1_000) == 0
    assert spool.prune(now=2_000) == 2
    assert spool.pending == 0
    assert spool.add(reports(0, 1)) == [True]  # its id is forgotten with it


@pytest.fixture
def shuffler_app(tmp_path: Path) -> object:
    app = create_app(
        {
            "SPOOL": str(tmp_path / "s.sqlite3"),
            "UPSTREAM": "http://127.0.0.1:9",  # nothing is forwarded in these tests
            "TOKEN": "unused",
            "BATCH_MIN": 1000,
            "SPOOL_CAPACITY": 4,
        }
    )
    public_tasks(app)
    yield app
    app.extensions["ldp_shuffler_forwarder"].stop()


def public_tasks(app: object) -> None:
    """Answer the shuffler's upload-key questions as a collector whose tasks take no key."""
    answer = requests.Response()
    answer.status_code, answer._content = 200, b'{"upload_key_sha256": null}'
    keys = app.extensions["ldp_shuffler_keys"]
    keys.session.get = lambda *args, **kwargs: answer


def post(app: object, body: object) -> object:
    return app.test_client().post(
        "/v1/tasks/t/reports", data=json.dumps(body), headers={"Content-Type": "application/json"}
    )


def test_intake_answers_202_with_what_it_knows(shuffler_app: object) -> None:
    good = [json.loads(r.body) for r in reports(0, 2)]
    bad = [{"report_id": "short", "time": 1}, {"report_id": b64encode(bytes(16)), "time": -1}]
    answer = post(shuffler_app, {"reports": [*good, *bad, good[0]]})
    assert answer.status_code == 202
    body = answer.get_json()
    assert body["accepted"] == 2
    assert [r["reason"] for r in body["rejected"]] == [
        "invalid_message",
        "invalid_message",
        "report_replayed",
    ]
    assert post(shuffler_app, {"reports": []}).status_code == 400


def test_a_full_spool_answers_503_with_retry_after(shuffler_app: object) -> None:
    now = int(time.time())  # current reports: the forwarder's prune must not free room
    first = post(shuffler_app, {"reports": [json.loads(r.body) for r in reports(0, 3, when=now)]})
    assert first.status_code == 202
    full = post(shuffler_app, {"reports": [json.loads(r.body) for r in reports(10, 2, when=now)]})
    assert full.status_code == 503
    assert full.headers["Retry-After"] == "5"


def test_a_batch_over_the_limit_answers_the_collectors_413(shuffler_app: object) -> None:
    limit = shuffler_app.config["MAX_REPORTS_PER_BATCH"]
    listed = [json.loads(r.body) for r in reports(0, limit + 1)]
    answer = post(shuffler_app, {"reports": listed})
    assert answer.status_code == 413
    problem = answer.get_json()
    assert problem["type"].endswith(":too_many_reports") and problem["limit"] == limit
    assert f"got {limit + 1}" in problem["detail"]


def test_an_unspoken_protocol_is_refused_as_the_collector_refuses_it(shuffler_app: object) -> None:
    body = json.dumps({"reports": [json.loads(r.body) for r in reports(0, 1)]})
    answers = {
        version: shuffler_app.test_client().post(
            "/v1/tasks/t/reports",
            data=body,
            headers={"Content-Type": "application/json", "LDP-Protocol": version},
        )
        for version in ("2.0", "1.x", "1.3")
    }
    for version in ("2.0", "1.x"):
        problem = answers[version].get_json()
        assert answers[version].status_code == 400
        assert problem["type"].endswith(":unsupported_protocol")
        assert problem["supported"] == ["1.0", "1.1"]
    assert answers["1.3"].status_code == 202  # any 1.<minor>, as the collector


def test_a_report_from_the_future_is_refused_not_spooled(shuffler_app: object) -> None:
    """A time past now + CLOCK_SKEW is in a future bucket for any task: the collector would
    refuse it, and spooled it would hold room until its time + RETENTION (year 5138 here)."""
    future = [json.loads(r.body) for r in reports(0, 2, when=10**11)]
    current = json.loads(reports(5, 1, when=int(time.time()))[0].body)
    answer = post(shuffler_app, {"reports": [*future, current]})
    body = answer.get_json()
    assert answer.status_code == 202 and body["accepted"] == 1
    assert [r["reason"] for r in body["rejected"]] == ["report_too_early"] * 2
    assert body["rejected"][0]["report_id"] == future[0]["report_id"]
    assert shuffler_app.extensions["ldp_shuffler_spool"].pending == 1


def test_a_task_request_is_relayed_with_its_id_quoted(
    shuffler_app: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []

    def get(self: object, url: str, **kwargs: object) -> requests.Response:
        asked.append(url)
        answer = requests.Response()
        answer.status_code, answer._content = 404, b"{}"
        return answer

    monkeypatch.setattr(requests.Session, "get", get)
    client = shuffler_app.test_client()
    assert client.get("/v1/tasks/a%3Fb%23c").status_code == 404
    assert asked == ["http://127.0.0.1:9/v1/tasks/a%3Fb%23c"]
