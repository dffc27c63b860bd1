"""The dashboard in a real browser: Debian's Chromium, driven by Playwright, on a real collector.

The collector (``ldp-aggregator serve``) is seeded over HTTP (tasks created with the admin
token, privatized reports uploaded, one batch replayed); every number a page shows is
compared with what the JSON API answers for the same question.
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import requests
from playwright.sync_api import Page, expect

from demo.dashboard import BROWSERS, HOUR, PER_BUCKET, Seeded
from tests.support.servers import ANALYST, bearer

Collector = tuple[str, Seeded]
TIMEOUT = 30


def api_estimates(url: str, task_id: str, **query: Any) -> requests.Response:
    return requests.post(
        f"{url}/v1/tasks/{task_id}/estimates", json=query, headers=bearer(ANALYST), timeout=TIMEOUT
    )


def metrics(url: str, name: str, label: str) -> dict[str, int]:
    """Return a counter's samples by label value, from /metrics."""
    text = requests.get(f"{url}/metrics", timeout=TIMEOUT).text
    pattern = rf'^{name}_total\{{{label}="([^"]+)"\}} ([0-9.e+]+)$'
    return {m[0]: int(float(m[1])) for m in re.findall(pattern, text, re.MULTILINE)}


def log_in(page: Page, url: str) -> None:
    page.goto(f"{url}/dashboard/login")
    page.get_by_label("Token").fill(ANALYST)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r".*/dashboard/(\?.*)?$"))


def column(page: Page, table: str, name: str, attribute: str = "value") -> list[str]:
    """Return a table column's cells: their exact data-value, or their text."""
    script = (
        "cells => cells.map(c => c.dataset.value)"
        if attribute == "value"
        else "cells => cells.map(c => c.textContent)"
    )
    return page.locator(f"#{table} td[data-column='{name}']").evaluate_all(script)


def assert_table_equals(page: Page, table: str, rows: list[dict[str, Any]]) -> None:
    """The table shows these rows: the values, and each number exactly and as formatted."""
    assert column(page, table, "value") == [str(row["value"]) for row in rows]
    for name in ("estimate", "std_error", "ci_low", "ci_high"):
        assert [float(v) for v in column(page, table, name)] == [row[name] for row in rows]
        assert column(page, table, name, "text") == [f"{row[name]:,.1f}" for row in rows]


def show(page: Page, url: str, task_id: str, candidates: list[str] | None = None) -> None:
    page.goto(f"{url}/dashboard/tasks/{task_id}")
    if candidates:
        page.get_by_label("Candidates, one per line").fill("\n".join(candidates))
    page.get_by_role("button", name="Show").click()
    page.wait_for_load_state()


def fits(page: Page, shots: Path, name: str) -> None:
    """Save the page at 1280 px and at 390 px (a phone), where nothing may overflow."""
    page.set_viewport_size({"width": 1280, "height": 900})
    page.screenshot(path=str(shots / f"{name}-1280.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(shots / f"{name}-390.png"), full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390, f"{name} overflows"


def test_an_unauthenticated_visit_goes_to_login_and_a_keyboard_login_comes_back(
    page: Page, seeded_collector: Collector, shots: Path
) -> None:
    url, _ = seeded_collector
    page.goto(f"{url}/dashboard/tasks/browser")
    assert page.url == f"{url}/dashboard/login"
    assert page.get_by_role("heading", name="Log in").is_visible()
    page.screenshot(path=str(shots / "login.png"))
    # Keyboard only: the token field has the focus; Enter submits.
    expect(page.get_by_label("Token")).to_be_focused()
    page.keyboard.type("wrong-token")
    page.keyboard.press("Enter")
    expect(page.get_by_role("alert")).to_contain_text("This token is not")
    expect(page.get_by_label("Token")).to_be_focused()
    page.keyboard.type(ANALYST)
    page.keyboard.press("Enter")
    page.wait_for_url(f"{url}/dashboard/tasks/browser")
    assert page.get_by_role("heading", name="Task browser").is_visible()
    page.keyboard.press("Tab")  # the first stop is the skip link, and it leads to the content
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main"


def test_the_task_list_shows_the_api_numbers(
    page: Page, seeded_collector: Collector, shots: Path
) -> None:
    url, seeded = seeded_collector
    log_in(page, url)
    ids = page.locator("#tasks tbody tr").evaluate_all("rows => rows.map(r => r.dataset.task)")
    assert sorted(ids) == sorted(seeded.tasks)
    accepted = metrics(url, "ldp_reports_accepted", "task_id")
    for task_id, reports, epsilon, effective, shown_accepted in zip(
        ids,
        column(page, "tasks", "reports"),
        column(page, "tasks", "epsilon"),
        column(page, "tasks", "effective_epsilon"),
        column(page, "tasks", "accepted"),
        strict=True,
    ):
        config = requests.get(f"{url}/v1/tasks/{task_id}", timeout=TIMEOUT).json()
        answer = api_estimates(url, task_id, **_any_candidates(seeded, task_id)).json()
        assert int(reports) == answer["n"]
        assert float(epsilon) == config["epsilon"]
        assert float(effective) == config["effective_epsilon"] == answer["effective_epsilon"]
        assert int(shown_accepted) == accepted[task_id]
    rejected = metrics(url, "ldp_reports_rejected", "reason")
    assert column(page, "rejected", "report_replayed") == [str(rejected["report_replayed"])]
    fits(page, shots, "tasks")


def test_the_task_page_shows_the_api_estimates(
    page: Page, seeded_collector: Collector, shots: Path
) -> None:
    url, seeded = seeded_collector
    log_in(page, url)
    show(page, url, "browser", list(BROWSERS))
    answer = api_estimates(url, "browser", candidates=list(BROWSERS)).json()
    top = sorted(answer["estimates"], key=lambda row: row["estimate"], reverse=True)
    assert_table_equals(page, "table-top", top)
    # Reports per bucket, the oldest below min_batch_size (and no estimate for it).
    buckets = [int(b) for b in column(page, "table-reports", "bucket_start_unix")]
    assert buckets == [
        seeded.latest_bucket - age * HOUR for age in reversed(range(len(PER_BUCKET)))
    ]
    for bucket, shown in zip(buckets, column(page, "table-reports", "reports"), strict=True):
        one = api_estimates(url, "browser", candidates=["Firefox"], start=bucket, end=bucket + HOUR)
        assert int(shown) == one.json()["n"]  # below min_batch_size the problem says n too
    assert column(page, "table-reports", "below_min_batch_size") == ["yes"] + ["no"] * 5
    # Over time: each bucket's row is that bucket's estimate.
    values = column(page, "table-over-time", "value")
    starts = [int(b) for b in column(page, "table-over-time", "bucket_start_unix")]
    shown = [v or None for v in column(page, "table-over-time", "estimate")]
    for value, start, estimate in zip(values, starts, shown, strict=True):
        one = api_estimates(url, "browser", candidates=[value], start=start, end=start + HOUR)
        if one.status_code == 422:
            assert estimate is None
        else:
            assert float(estimate) == one.json()["estimates"][0]["estimate"]
    fits(page, shots, "task-cms")


def test_changing_the_time_range_changes_the_numbers_as_the_api_does(
    page: Page, seeded_collector: Collector
) -> None:
    url, seeded = seeded_collector
    log_in(page, url)
    show(page, url, "browser", ["Firefox", "Chrome"])
    start = seeded.latest_bucket - 2 * HOUR
    page.get_by_label("From (UTC, bucket start)").fill(
        time.strftime("%Y-%m-%dT%H:%M", time.gmtime(start))
    )
    page.get_by_role("button", name="Show").click()
    page.wait_for_url(re.compile(r".*start=.*"))
    answer = api_estimates(url, "browser", candidates=["Firefox", "Chrome"], start=start).json()
    assert answer["n"] < sum(round(n * 0.3) for n in PER_BUCKET)  # the range excludes buckets
    top = sorted(answer["estimates"], key=lambda row: row["estimate"], reverse=True)
    assert_table_equals(page, "table-top", top)
    assert [int(b) for b in column(page, "table-reports", "bucket_start_unix")] == [
        start,
        start + HOUR,
        start + 2 * HOUR,
    ]


def test_the_csv_download_holds_what_the_chart_shows(
    page: Page, seeded_collector: Collector, tmp_path: Path
) -> None:
    url, _ = seeded_collector
    log_in(page, url)
    show(page, url, "browser", list(BROWSERS))
    with page.expect_download() as download:
        page.locator("#download-top-csv").click()
    saved = tmp_path / download.value.suggested_filename
    download.value.save_as(saved)
    assert saved.name == "browser-top.csv"
    rows = list(csv.DictReader(saved.open()))
    answer = api_estimates(url, "browser", candidates=list(BROWSERS)).json()
    top = sorted(answer["estimates"], key=lambda row: row["estimate"], reverse=True)
    assert [row["value"] for row in rows] == [row["value"] for row in top]
    for name in ("estimate", "std_error", "ci_low", "ci_high"):
        assert [float(row[name]) for row in rows] == [row[name] for row in top]
    with page.expect_download() as drawing:
        page.locator("#download-top-svg").click()
    assert Path(drawing.value.path()).read_text().startswith("<svg")


def test_the_heavy_hitter_view_shows_the_api_discoveries(
    page: Page, seeded_collector: Collector, shots: Path
) -> None:
    url, _ = seeded_collector
    log_in(page, url)
    page.goto(f"{url}/dashboard/tasks/words-typed")
    page.locator("#to-heavy-hitters").click()
    page.wait_for_url(f"{url}/dashboard/tasks/words-typed/heavy-hitters")
    found = requests.post(
        f"{url}/v1/tasks/words-typed/heavy-hitters",
        json={"top": 20, "survivors": 64},
        headers=bearer(ANALYST),
        timeout=TIMEOUT,
    ).json()
    rows = found["heavy_hitters"]
    assert rows, "the seeded words were not found"
    assert_table_equals(page, "table-heavy-hitters", rows)
    assert column(page, "table-heavy-hitters", "reliable") == [
        "yes" if row["reliable"] else "no" for row in rows
    ]
    fits(page, shots, "heavy-hitters")
    # Following the top discovered strings leads to their estimates, over the range and time.
    followed = [row["value"] for row in rows[:5]]
    page.locator("#follow").click()
    page.wait_for_url(re.compile(r".*/dashboard/tasks/words-typed\?.*candidates=.*"))
    assert page.get_by_label("Candidates, one per line").input_value() == "\n".join(followed)
    answer = api_estimates(url, "words-typed", candidates=followed).json()
    top = sorted(answer["estimates"], key=lambda row: row["estimate"], reverse=True)
    assert_table_equals(page, "table-top", top)
    fits(page, shots, "task-hh")


def test_a_yes_no_task_shows_the_api_estimates(page: Page, seeded_collector: Collector) -> None:
    url, _ = seeded_collector
    log_in(page, url)
    show(page, url, "dark-mode")
    answer = api_estimates(url, "dark-mode").json()
    top = sorted(answer["estimates"], key=lambda row: row["estimate"], reverse=True)
    assert_table_equals(page, "table-top", top)


def test_the_planner_shows_the_figures_of_tasks_plan(
    page: Page, seeded_collector: Collector, shots: Path
) -> None:
    url, _ = seeded_collector
    log_in(page, url)
    page.get_by_role("link", name="Planner").click()
    page.get_by_label("Distinct values (domain size)").fill("5000")
    page.get_by_label("Reports per estimate").fill("200000")
    page.get_by_label("ε per report").fill("3")
    page.get_by_role("button", name="Plan").click()
    page.wait_for_url(re.compile(r".*epsilon=3.*"))
    printed = subprocess.run(
        [sys.executable, "-m", "ldp_telemetry.aggregator.cli", "tasks", "plan",
         "--domain-size", "5000",
         "--devices", "200000", "--epsilon", "3", "--format", "json"],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    expected = json.loads(printed.stdout)
    shown = page.locator("#plans tbody tr").evaluate_all(
        "rows => rows.map(r => r.dataset.mechanism)"
    )
    assert shown == [plan["mechanism"] for plan in expected]
    assert [float(v) for v in column(page, "plans", "std_error")] == [
        plan["std_error"] for plan in expected
    ]
    assert [int(v) for v in column(page, "plans", "report_bits")] == [
        plan["report_bits"] for plan in expected
    ]
    fits(page, shots, "planner")


def test_a_post_without_the_csrf_token_is_refused_and_logout_works(
    page: Page, seeded_collector: Collector
) -> None:
    url, _ = seeded_collector
    log_in(page, url)
    refused = page.request.post(f"{url}/dashboard/logout", form={"csrf_token": "guessed"})
    assert refused.status == 400
    page.goto(f"{url}/dashboard/")
    assert page.get_by_role("heading", name="Tasks").is_visible()  # still logged in
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(f"{url}/dashboard/login")
    page.goto(f"{url}/dashboard/")
    assert page.url == f"{url}/dashboard/login"
    cookies = page.context.cookies()
    assert all(ANALYST not in c["value"] for c in cookies)


def _any_candidates(seeded: Seeded, task_id: str) -> dict[str, Any]:
    """Return an estimates query the task answers (a sketch needs candidates)."""
    mechanism = seeded.tasks[task_id].mechanism_object
    try:
        mechanism.parse_candidates(None)
    except Exception:
        return {"candidates": ["hello"] if hasattr(mechanism, "discover") else ["Firefox"]}
    return {}


@pytest.fixture(autouse=True)
def _short_timeouts(page: Page) -> None:
    page.set_default_timeout(15_000)
