"""The task page of a task with dimensions: estimates by a dimension (grouped bars, a thin
group rolled up, the same numbers as the API), and what changed between the last two
buckets (significant after Holm, as POST /compare answers)."""

from __future__ import annotations

import html
import re
import time
from pathlib import Path

import numpy as np
import pytest
from flask import Flask
from flask.testing import FlaskClient

from ldp_telemetry.shared.mechanisms.registry import plan
from tests.aggregator.breakdowns.uploads import PLATFORM, ask, create, envelopes, upload
from tests.aggregator.dashboard.pages import csrf_of
from tests.support.collectors import make_app
from tests.support.servers import ANALYST

HOUR = 3600
COLOURS = ["red", "green", "blue"]


@pytest.fixture
def app(tmp_path: Path) -> Flask:
    return make_app(str(tmp_path / "dash.sqlite3"))


@pytest.fixture
def seeded(client: FlaskClient) -> int:
    """A grr task by platform over two hourly buckets: red doubles in the latest."""
    task = create(
        client, task_id="colours", mechanism="grr", epsilon=3.0, domain=COLOURS,
        dimensions=[PLATFORM], time_precision=HOUR, min_batch_size=50,
    )  # fmt: skip
    rng, sent = np.random.default_rng(4), []
    latest = task.floor_time(time.time())
    for bucket, shares in ((latest - HOUR, (0.2, 0.4, 0.4)), (latest, (0.4, 0.3, 0.3))):
        for platform, devices in (("android", 1_500), ("ios", 1_000), ("web", 20)):
            values = list(rng.choice(COLOURS, devices, p=shares))
            sent += envelopes(task, values, rng, {"platform": platform}, bucket)
    upload(client, task, sent)
    form = client.get("/dashboard/login")
    client.post("/dashboard/login", data={"token": ANALYST, "csrf_token": csrf_of(form.text)})
    return latest


def cells(page: str, table: str, column: str) -> list[str]:
    body = page[page.index(f'id="{table}"') :]
    body = body[: body.index("</table>")]
    return [
        html.unescape(v) for v in re.findall(rf'data-column="{column}" data-value="([^"]*)"', body)
    ]


def test_estimates_by_a_dimension_are_the_apis_rows(client: FlaskClient, seeded: int) -> None:
    page = client.get("/dashboard/tasks/colours?group_by=platform").text
    assert 'id="chart-breakdown"' in page and "not protected by local differential privacy" in page
    body = ask(client, "colours", group_by=["platform"]).get_json()
    names = {"android": "platform=android (+1 rolled up)", "ios": "platform=ios"}
    assert [b["dimensions"] for b in body["slices"]] == [
        {"platform": "android"},
        {"platform": "ios"},
    ]
    shown = cells(page, "table-breakdown", "slice")
    assert set(shown) == set(names.values())  # web (40) is never a row of its own
    expected = [
        row["estimate"]
        for value in ("red", "green", "blue")
        for block in body["slices"]
        for row in block["estimates"]
        if row["value"] == value
    ]
    assert sorted(float(v) for v in cells(page, "table-breakdown", "estimate")) == sorted(expected)
    assert "Rolled up into platform=android: platform=web" in html.unescape(page)
    refused = client.get("/dashboard/tasks/colours?group_by=country").text
    assert "which the task does not declare" in html.unescape(refused)


def test_what_changed_lists_the_significant_changes(client: FlaskClient, seeded: int) -> None:
    page = client.get("/dashboard/tasks/colours").text
    body = ask(
        client, "colours", "compare",
        a={"start": seeded, "end": seeded + HOUR}, b={"start": seeded - HOUR, "end": seeded},
    ).get_json()  # fmt: skip
    significant = [d["value"] for d in body["differences"] if d["significant"]]
    assert "red" in significant
    listed = re.findall(
        r'<li data-value="([^"]+)">', page[page.index('id="significant-changes"') :]
    )
    assert listed == significant
    assert [float(v) for v in cells(page, "table-changes", "difference")] == [
        d["difference"] for d in body["differences"]
    ]
    assert cells(page, "table-changes", "significant") == [
        "yes" if d["significant"] else "no" for d in body["differences"]
    ]


def test_the_planner_gives_the_se_per_slice_and_warns_of_roll_ups(client: FlaskClient) -> None:
    form = client.get("/dashboard/login")
    client.post("/dashboard/login", data={"token": ANALYST, "csrf_token": csrf_of(form.text)})
    page = client.get("/dashboard/plan?domain_size=10&devices=1000&epsilon=2&slices=12").text
    assert 'data-per-slice="83"' in page and 'id="roll-up-warning"' not in page
    shown = re.findall(r'data-column="slice_std_error" data-value="([^"]*)"', page)
    assert sorted(float(v) for v in shown) == sorted(p.std_error for _, p in plan(2.0, 10, 83))
    thin = client.get("/dashboard/plan?domain_size=10&devices=1000&epsilon=2&slices=40").text
    assert 'data-per-slice="25"' in thin and 'id="roll-up-warning"' in thin
    refused = client.get("/dashboard/plan?domain_size=10&devices=1000&epsilon=2&slices=0").text
    assert "slices must be between 1 and the reports" in html.unescape(refused)
