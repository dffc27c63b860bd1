"""The dashboard through Flask's test client: access, CSRF, pages, numbers and downloads."""

from __future__ import annotations

import csv
import io
import json
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from flask import Flask
from flask.testing import FlaskClient

from demo.dashboard import envelopes
from ldp_telemetry.aggregator.api.resources import get_store
from ldp_telemetry.aggregator.cli import main as cli
from ldp_telemetry.aggregator.core.auth import hash_token
from ldp_telemetry.aggregator.dashboard import access, svg
from ldp_telemetry.shared import TaskConfig, encode_batch
from ldp_telemetry.shared.codec import b64encode, new_report_id
from tests.aggregator.dashboard.pages import csrf_of
from tests.support.collectors import make_app
from tests.support.servers import ADMIN, ANALYST, bearer

HOUR = 3600
CMS = {"task_id": "fruit", "mechanism": "cms", "epsilon": 4.0, "k": 32, "m": 64}
RR = {"task_id": "yes-no", "mechanism": "rr", "epsilon": 1.0}
COMMON = {"time_precision": HOUR, "min_batch_size": 50}
FRUIT = ["apple", "pear", "plum"]
PER_BUCKET = (20, 300, 400)  # oldest first: the oldest is below min_batch_size


@pytest.fixture
def app(tmp_path: Path) -> Flask:
    return make_app(str(tmp_path / "dash.sqlite3"))


@pytest.fixture
def seeded(client: FlaskClient) -> dict[str, Any]:
    """Create a cms and an rr task and upload three hourly buckets to each."""
    rng = np.random.default_rng(7)
    now = time.time()
    tasks = {}
    for params in (CMS, RR):
        created = client.post("/v1/tasks", json={**params, **COMMON}, headers=bearer(ADMIN))
        assert created.status_code == 201, created.text
        task = TaskConfig.from_dict(created.json)
        tasks[task.task_id] = task
        for age, count in enumerate(reversed(PER_BUCKET)):
            values: list[Any] = (
                [FRUIT[i] for i in rng.choice(3, size=count, p=[0.6, 0.3, 0.1])]
                if task.mechanism == "cms"
                else [bool(x) for x in rng.random(count) < 0.4]
            )
            body = encode_batch(task, envelopes(task, values, now - age * HOUR, rng))
            sent = client.post(
                f"/v1/tasks/{task.task_id}/reports", data=body, content_type="application/json"
            )
            assert sent.status_code == 200 and sent.json["accepted"] == count
    return {"tasks": tasks, "latest": tasks["fruit"].floor_time(now)}


def log_in(client: FlaskClient, token: str = ANALYST) -> Any:
    form = client.get("/dashboard/login")
    return client.post("/dashboard/login", data={"token": token, "csrf_token": csrf_of(form.text)})


def cells(html: str, table: str, column: str) -> list[str]:
    """Return the data-value of every cell of a column in a table (by the table's id)."""
    body = html[html.index(f'id="{table}"') :]
    body = body[: body.index("</table>")]
    return re.findall(rf'data-column="{column}" data-value="([^"]*)"', body)


def estimates(client: FlaskClient, task_id: str, **query: Any) -> Any:
    return client.post(f"/v1/tasks/{task_id}/estimates", json=query, headers=bearer(ANALYST))


@pytest.mark.parametrize(
    "path",
    ["/dashboard/", "/dashboard/tasks/fruit", "/dashboard/plan", "/dashboard/tasks/x/top.csv"],
)
def test_a_visit_without_a_session_goes_to_the_login_form(client: FlaskClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 302 and response.headers["Location"] == "/dashboard/login"


def test_login_sets_a_secure_httponly_samesite_cookie_without_the_token(
    client: FlaskClient,
) -> None:
    client.get("/dashboard/tasks/fruit")  # remembered: the login leads back there
    response = log_in(client)
    assert response.status_code == 302
    assert response.headers["Location"] == "/dashboard/tasks/fruit"
    cookie = next(c for c in response.headers.getlist("Set-Cookie") if "ldp_dashboard=" in c)
    flags = {part.strip().split("=")[0].lower() for part in cookie.split(";")}
    assert {"secure", "httponly", "samesite"} <= flags
    assert "SameSite=Lax" in cookie and "Path=/dashboard" in cookie
    assert ANALYST not in cookie
    assert client.get("/dashboard/").status_code == 200


def test_a_wrong_token_or_a_form_without_csrf_is_refused(client: FlaskClient) -> None:
    assert log_in(client, "not-a-token").status_code == 401
    assert client.get("/dashboard/").status_code == 302
    refused = client.post("/dashboard/login", data={"token": ANALYST})
    assert refused.status_code == 400 and "form is out of date" in refused.text
    assert client.get("/dashboard/").status_code == 302


def test_logout_needs_the_csrf_token_and_ends_the_session(client: FlaskClient) -> None:
    log_in(client)
    page = client.get("/dashboard/")
    assert client.post("/dashboard/logout").status_code == 400
    assert client.get("/dashboard/").status_code == 200  # still logged in
    assert (
        client.post("/dashboard/logout", data={"csrf_token": csrf_of(page.text)}).status_code == 302
    )
    assert client.get("/dashboard/").status_code == 302


def test_revoking_a_stored_token_ends_its_sessions(app: Flask, client: FlaskClient) -> None:
    token = "a-stored-analyst-token"
    with app.app_context():
        get_store().add_token(hash_token(token), "analyst")
    log_in(client, token)
    assert client.get("/dashboard/").status_code == 200
    with app.app_context():
        assert get_store().revoke_token(hash_token(token))
    assert client.get("/dashboard/").status_code == 302


def test_pages_send_security_headers(client: FlaskClient) -> None:
    response = client.get("/dashboard/login")
    assert "default-src 'none'" in response.headers["Content-Security-Policy"]
    assert response.headers["Cache-Control"] == "no-store"
    assert "<script" not in response.text


def test_the_task_list_shows_the_reports_the_api_counts(
    client: FlaskClient, seeded: dict[str, Any]
) -> None:
    log_in(client)
    html = client.get("/dashboard/").text
    tasks = re.findall(r'<tr data-task="([^"]+)"', html)
    rows = dict(zip(tasks, cells(html, "tasks", "reports"), strict=True))
    assert rows == {"fruit": str(sum(PER_BUCKET)), "yes-no": str(sum(PER_BUCKET))}
    assert estimates(client, "yes-no").json["n"] == sum(PER_BUCKET)
    assert cells(html, "tasks", "time_precision") == [str(HOUR), str(HOUR)]


def test_the_task_page_shows_the_api_estimates(client: FlaskClient, seeded: dict[str, Any]) -> None:
    log_in(client)
    html = client.get("/dashboard/tasks/fruit", query_string={"candidates": "\n".join(FRUIT)}).text
    api = estimates(client, "fruit", candidates=FRUIT).json
    rows = sorted(api["estimates"], key=lambda row: row["estimate"], reverse=True)
    assert cells(html, "table-top", "value") == [row["value"] for row in rows]
    for column in ("estimate", "std_error", "ci_low", "ci_high"):
        assert [float(v) for v in cells(html, "table-top", column)] == [r[column] for r in rows]
    # Reports per bucket: the oldest is below min_batch_size, and explained.
    assert cells(html, "table-reports", "reports") == [str(n) for n in PER_BUCKET]
    assert cells(html, "table-reports", "below_min_batch_size") == ["yes", "no", "no"]
    assert "min_batch_size (50)" in html


def test_the_task_page_shows_the_fake_device_checks(
    client: FlaskClient, seeded: dict[str, Any]
) -> None:
    log_in(client)
    honest = client.get("/dashboard/tasks/fruit", query_string={"candidates": "apple"}).text
    assert 'data-suspected="false"' in honest and "0 reports were refused" in honest
    task = seeded["tasks"]["fruit"]
    fake = {"row": 0, "bits": b64encode(b"\xff" * 8)}  # 64 ones: outside the honest band
    body = {
        "reports": [
            {
                "report_id": b64encode(new_report_id()),
                "fingerprint": task.fingerprint,
                "time": seeded["latest"],
                **fake,
            }
            for _ in range(3)
        ]
    }
    sent = client.post(f"/v1/tasks/{task.task_id}/reports", json=body)
    assert [r["reason"] for r in sent.json["rejected"]] == ["implausible_report"] * 3
    flagged = client.get("/dashboard/tasks/fruit", query_string={"candidates": "apple"}).text
    assert 'data-suspected="true"' in flagged and "3 reports were refused" in flagged


def test_csv_downloads_hold_the_api_numbers_and_svg_the_drawing(
    client: FlaskClient, seeded: dict[str, Any]
) -> None:
    log_in(client)
    latest = seeded["latest"]
    start = time.strftime("%Y-%m-%dT%H:%M", time.gmtime(latest - HOUR))
    query = {"candidates": "apple\npear", "start": start}
    response = client.get("/dashboard/tasks/fruit/over-time.csv", query_string=query)
    assert (
        response.mimetype == "text/csv" and "attachment" in response.headers["Content-Disposition"]
    )
    rows = list(csv.DictReader(io.StringIO(response.text)))
    assert [(r["value"], int(r["bucket_start_unix"])) for r in rows] == [
        (value, bucket) for value in ("apple", "pear") for bucket in (latest - HOUR, latest)
    ]
    for row in rows:
        bucket = int(row["bucket_start_unix"])
        api = estimates(
            client, "fruit", candidates=[row["value"]], start=bucket, end=bucket + HOUR
        ).json
        assert float(row["estimate"]) == api["estimates"][0]["estimate"]
        assert int(row["n"]) == api["n"]
    drawing = client.get("/dashboard/tasks/fruit/top.svg", query_string=query)
    assert drawing.mimetype == "image/svg+xml" and drawing.text.startswith("<svg")
    assert client.get("/dashboard/tasks/fruit/nope.csv").status_code == 404


def test_a_range_below_min_batch_size_says_so(client: FlaskClient, seeded: dict[str, Any]) -> None:
    log_in(client)
    oldest = seeded["latest"] - 2 * HOUR
    query = {
        "start": time.strftime("%Y-%m-%dT%H:%M", time.gmtime(oldest)),
        "end": time.strftime("%Y-%m-%dT%H:%M", time.gmtime(oldest + HOUR)),
    }
    html = client.get("/dashboard/tasks/yes-no", query_string=query).text
    api = estimates(client, "yes-no", start=oldest, end=oldest + HOUR)
    assert api.status_code == 422
    assert api.json["detail"] in html.replace("&#39;", "'")


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"level": "2"}, "level must be a number in (0, 1)"),
        ({"level": "x"}, "the confidence level must be a number"),
        ({"start": "2026-02-01T00:00", "end": "2026-01-01T00:00"}, "must be before end"),
        ({"start": "yesterday"}, "start must be a date and time"),
        ({"candidates": "x"}, "rr tasks estimate yes and no"),
    ],
)
def test_form_mistakes_are_explained_not_500(
    client: FlaskClient, seeded: dict[str, Any], query: dict[str, str], message: str
) -> None:
    log_in(client)
    response = client.get("/dashboard/tasks/yes-no", query_string=query)
    assert response.status_code == 200 and message in response.text


def test_an_unknown_task_is_a_404_page(client: FlaskClient) -> None:
    log_in(client)
    response = client.get("/dashboard/tasks/nothing")
    assert response.status_code == 404 and "there is no task" in response.text
    assert response.mimetype == "text/html"


def test_the_planner_shows_the_figures_of_tasks_plan(client: FlaskClient) -> None:
    log_in(client)
    args = {"domain_size": "1000", "devices": "100000", "epsilon": "2"}
    html = client.get("/dashboard/plan", query_string=args).text
    printed = CliRunner().invoke(
        cli,
        [
            "tasks",
            "plan",
            "--domain-size",
            "1000",
            "--devices",
            "100000",
            "--epsilon",
            "2",
            "--format",
            "json",
        ],
    )
    expected = json.loads(printed.output)
    assert re.findall(r'<tr data-mechanism="([^"]+)"', html) == [p["mechanism"] for p in expected]
    assert [float(v) for v in cells(html, "plans", "std_error")] == [
        p["std_error"] for p in expected
    ]
    assert [float(v) for v in cells(html, "plans", "attack_success")] == [
        p["attack_success"] for p in expected
    ]
    assert 'id="attack-note"' in html
    assert [float(v) for v in cells(html, "plans", "fake_report_worth")] == [
        p["fake_report_worth"] for p in expected
    ]
    bad = client.get("/dashboard/plan", query_string={**args, "epsilon": "0"})
    assert "ε must be in (0, 20]" in bad.text


def test_only_dashboard_paths_are_followed_after_login() -> None:
    assert access.safe_next("/dashboard/tasks/a?x=1", "/d") == "/dashboard/tasks/a?x=1"
    for target in ("https://evil.example/dashboard", "//evil.example/dashboard", "/v1/tasks", None):
        assert access.safe_next(target, "/d") == "/d"


def test_svg_labels_are_escaped_and_ticks_are_round() -> None:
    drawing = svg.bar_chart(
        "c", "t <b>", [svg.Bar("<script>alert(1)</script>", 3.0, 1.0, 5.0)], "x"
    )
    assert "<script>" not in drawing and "&lt;script&gt;" in drawing
    assert svg.nice_ticks(-12.0, 2700.0) == [-1000.0, 0.0, 1000.0, 2000.0, 3000.0]
    assert svg.nice_ticks(0.0, 0.0) == [-1.0, -0.5, 0.0, 0.5, 1.0]


def test_new_reports_show_at_once_though_answers_are_reused(
    client: FlaskClient, seeded: dict[str, Any]
) -> None:
    log_in(client)
    query = {"candidates": "\n".join(FRUIT)}
    first = client.get("/dashboard/tasks/fruit", query_string=query).text
    assert client.get("/dashboard/tasks/fruit", query_string=query).text == first  # reused
    task = seeded["tasks"]["fruit"]
    rng = np.random.default_rng(8)
    body = encode_batch(task, envelopes(task, ["pear"] * 30, time.time(), rng))
    client.post("/v1/tasks/fruit/reports", data=body, content_type="application/json")
    html = client.get("/dashboard/tasks/fruit", query_string=query).text
    api = estimates(client, "fruit", candidates=FRUIT).json
    assert api["n"] == sum(PER_BUCKET) + 30
    rows = sorted(api["estimates"], key=lambda row: row["estimate"], reverse=True)
    assert [float(v) for v in cells(html, "table-top", "estimate")] == [r["estimate"] for r in rows]
    assert cells(html, "table-reports", "reports")[-1] == str(PER_BUCKET[-1] + 30)
