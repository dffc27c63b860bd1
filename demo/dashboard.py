"""Example tasks for the dashboard, and the README's screenshot of it.

``python -m demo.dashboard`` (``make screenshot``) starts a collector, creates an ``rr``, a
``cms`` and an ``hh`` task over HTTP, uploads privatized reports into six hourly buckets
(the oldest below ``min_batch_size``) plus one replayed batch (so rejections show), logs in
to the dashboard in Debian's Chromium and saves the ``cms`` task's page as
``docs/dashboard.png``. The browser tests seed their collector with :func:`seed` too.
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import requests

from ldp_telemetry.shared import Envelope, TaskConfig, encode_batch, new_report_id

HOUR = 3600
BUCKETS = 6
# Reports per hourly bucket, oldest first: the oldest is below min_batch_size (100).
PER_BUCKET = (60, 700, 1100, 1500, 1300, 1000)
BROWSERS = ("Firefox", "Chrome", "Safari", "Edge", "Opera", "Vivaldi", "Brave")
WORDS = ("hello", "thanks", "please", "sorry", "lunch", "coffee", "later", "maybe")
TASKS: tuple[dict[str, Any], ...] = (
    {"task_id": "dark-mode", "mechanism": "rr", "epsilon": math.log(3)},
    {"task_id": "browser", "mechanism": "cms", "epsilon": 4.0, "k": 256, "m": 256},
    {
        "task_id": "words-typed",
        "mechanism": "hh",
        "epsilon": 4.0,
        "k": 64,
        "m": 256,
        "alphabet": "abcdefghijklmnopqrstuvwxyz",
        "max_length": 8,
    },
)
COMMON = {"time_precision": HOUR, "min_batch_size": 100}
REPLAYED = 10  # reports of one batch sent twice: rejected as report_replayed
BATCH = 500
CHROMIUM = "/usr/bin/chromium"


@dataclass(frozen=True)
class Seeded:
    """The seeded tasks, by id, and the start of the latest bucket."""

    tasks: dict[str, TaskConfig]
    latest_bucket: int


def seed(url: str, admin_token: str, rng: np.random.Generator, scale: float = 1.0) -> Seeded:
    """Create the example tasks and upload their reports; ``scale`` multiplies the counts."""
    now = time.time()
    tasks = {}
    for params in TASKS:
        task = create(url, admin_token, {**params, **COMMON})
        tasks[task.task_id] = task
        for age, count in enumerate(reversed(PER_BUCKET)):
            at = now - age * HOUR
            values = population(task, max(1, round(count * scale)), age, rng)
            upload(url, task, values, at, rng)
    browser = tasks["browser"]
    replay = envelopes(browser, ["Firefox"] * REPLAYED, now, rng)
    for _ in range(2):  # the second time every report is a replay
        post(url, browser, replay)
    return Seeded(tasks, tasks["browser"].floor_time(now))


def population(task: TaskConfig, count: int, age: int, rng: np.random.Generator) -> list[Any]:
    """Return one bucket's true values: shares drift a little from bucket to bucket."""
    if task.mechanism == "rr":
        return [bool(x) for x in rng.random(count) < 0.30 + 0.02 * (BUCKETS - age)]
    choices = BROWSERS if task.mechanism == "cms" else WORDS
    weights = 1.0 / np.arange(1, len(choices) + 1) ** (1.2 + 0.05 * age)
    picks = rng.choice(len(choices), size=count, p=weights / weights.sum())
    return [choices[i] for i in picks]


def create(url: str, admin_token: str, params: dict[str, Any]) -> TaskConfig:
    """Create a task over HTTP with the admin token."""
    response = requests.post(
        f"{url}/v1/tasks",
        json=params,
        timeout=30,
        headers={"Authorization": f"Bearer {admin_token}"},
    )
    response.raise_for_status()
    body = {k: v for k, v in response.json().items() if k not in ("upload_key", "archive")}
    return TaskConfig.from_dict(body)


def envelopes(
    task: TaskConfig, values: Sequence[Any], at: float, rng: np.random.Generator
) -> list[Envelope]:
    """Privatize values as devices do and wrap them as reports of the bucket of ``at``."""
    batch: Any = task.mechanism_object.privatize_many(values, rng)
    reports = [batch.report(i) for i in range(len(values))] if hasattr(batch, "report") else batch
    bucket = task.floor_time(at)
    return [Envelope(new_report_id(), task.fingerprint, bucket, _payload(r)) for r in reports]


def _payload(report: Any) -> Any:
    return int(report) if isinstance(report, np.integer | np.bool_) else report


def upload(
    url: str, task: TaskConfig, values: Sequence[Any], at: float, rng: np.random.Generator
) -> None:
    """Upload privatized values in batches."""
    reports = envelopes(task, values, at, rng)
    for start in range(0, len(reports), BATCH):
        post(url, task, reports[start : start + BATCH])


def post(url: str, task: TaskConfig, reports: Sequence[Envelope]) -> dict[str, Any]:
    """POST one batch of reports and return the answer."""
    response = requests.post(
        f"{url}/v1/tasks/{task.task_id}/reports",
        data=encode_batch(task, reports),
        headers={"Content-Type": "application/json"},
        timeout=30,
    )
    response.raise_for_status()
    return dict(response.json())


def screenshot(url: str, analyst_token: str, out: Path) -> None:
    """Log in through the form and save the cms task's page (1280 px wide)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 1500})
        page.goto(f"{url}/dashboard/tasks/browser")
        page.get_by_label("Token").fill(analyst_token)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url("**/dashboard/tasks/browser")
        page.fill("#candidates", "\n".join(BROWSERS))
        page.get_by_role("button", name="Show").click()
        page.wait_for_load_state()
        # The charts of the range and over time, with the page's header above them.
        top = page.locator("#heading-top").bounding_box()
        assert top is not None, "the task page shows no estimates"
        page.screenshot(
            path=str(out),
            full_page=True,
            clip={"x": 0, "y": top["y"] - 16, "width": 1280, "height": 1500},
        )
        browser.close()


def main() -> None:
    """Seed a throwaway collector and save the screenshot."""
    from demo.server import running_collector

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/dashboard.png"))
    parser.add_argument("--seed", type=int, default=17)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="ldp-dashboard-") as folder,
        running_collector(Path(folder)) as collector,
    ):
        seed(collector.url, collector.admin_token, np.random.default_rng(args.seed))
        screenshot(collector.url, collector.analyst_token, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
