"""The breakdown chart and "what changed" in Debian's Chromium, on a real collector seeded
over HTTP: every number shown is the JSON API's for the same question."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import requests
from playwright.sync_api import Page, expect

from ldp_telemetry.shared import encode_batch
from tests.aggregator.breakdowns.uploads import PLATFORM, envelopes
from tests.aggregator.dashboard.test_browser import column, fits, log_in
from tests.support.reports import create_task
from tests.support.servers import ANALYST, bearer, start_server

HOUR, TIMEOUT = 3600, 30
COLOURS = ["red", "green", "blue"]


@pytest.fixture(scope="module")
def collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """Yield a collector's URL seeded with a grr task by platform over two hourly buckets
    (red doubles in the latest; web too thin to be a row), and the latest bucket."""
    server = start_server(tmp_path_factory.mktemp("breakdowns") / "dash.sqlite3")
    try:
        task = create_task(
            server.url, task_id="colours", mechanism="grr", epsilon=3.0, domain=COLOURS,
            dimensions=[PLATFORM], time_precision=HOUR, min_batch_size=50,
        )  # fmt: skip
        rng, latest = np.random.default_rng(4), task.floor_time(time.time())
        for bucket, shares in ((latest - HOUR, (0.2, 0.4, 0.4)), (latest, (0.4, 0.3, 0.3))):
            for platform, devices in (("android", 1_500), ("ios", 1_000), ("web", 20)):
                values = list(rng.choice(COLOURS, devices, p=shares))
                sent = envelopes(task, values, rng, {"platform": platform}, bucket)
                answer = requests.post(
                    f"{server.url}/v1/tasks/colours/reports",
                    data=encode_batch(task, sent),
                    headers={"Content-Type": "application/json"},
                    timeout=TIMEOUT,
                )
                assert answer.status_code == 200 and answer.json()["accepted"] == devices
        yield server.url, latest
    finally:
        server.kill()


def api(url: str, what: str, **query: object) -> dict:
    answer = requests.post(
        f"{url}/v1/tasks/colours/{what}", json=query, headers=bearer(ANALYST), timeout=TIMEOUT
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_estimates_by_platform_and_what_changed(
    page: Page, collector: tuple[str, int], shots: Path
) -> None:
    url, latest = collector
    log_in(page, url)
    page.goto(f"{url}/dashboard/tasks/colours")
    page.get_by_label("Group by (public dimension)").select_option("platform")
    page.get_by_role("button", name="Show").click()
    page.wait_for_load_state()
    expect(page.locator("#chart-breakdown")).to_be_visible()
    expect(page.get_by_text("not protected by local differential privacy")).to_be_visible()
    expect(page.locator(".rolled-up")).to_contain_text("platform=web")
    body = api(url, "estimates", group_by=["platform"])
    blocks = {block["dimensions"]["platform"]: block for block in body["slices"]}
    assert sorted(blocks) == ["android", "ios"]  # web is rolled up into android
    page.locator("#heading-breakdown ~ details summary").click()
    shown = zip(
        *(column(page, "table-breakdown", name) for name in ("slice", "value", "estimate")),
        strict=True,
    )
    names = {"platform=android (+1 rolled up)": "android", "platform=ios": "ios"}
    expected = {
        (name, row["value"], row["estimate"])
        for name, platform in names.items()
        for row in blocks[platform]["estimates"]
    }
    assert {(s, v, float(e)) for s, v, e in shown} == expected

    changes = api(
        url, "compare", a={"start": latest, "end": latest + HOUR},
        b={"start": latest - HOUR, "end": latest},
    )  # fmt: skip
    significant = [d["value"] for d in changes["differences"] if d["significant"]]
    assert "red" in significant
    listed = page.locator("#significant-changes li").evaluate_all(
        "items => items.map(i => i.dataset.value)"
    )
    assert listed == significant
    expect(page.locator("#chart-changes")).to_be_visible()
    fits(page, shots, "breakdown")
