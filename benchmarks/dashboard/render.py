"""How long the dashboard's pages take to render with many tasks and many reports.

python -m benchmarks.dashboard.render                       # 100 tasks, 10^6 reports
python -m benchmarks.dashboard.render --reports 100000      # smaller
python -m benchmarks.dashboard.render --hh                  # heavy-hitter discovery alone

Fills a SQLite store through the store interface (the ingest path without HTTP: privatized
reports in batches of 5,000): one cms task (k = m = 1024) with half the reports, an hh task
(k = m = 1024) with a fifth, an rr task with a tenth, and the other tasks (rr, grr and
cms k = m = 256, in turn) sharing the rest, every task over 24 hourly buckets. Then logs in
with Flask's test client and times each page (server-side: request to rendered HTML) a few
times: once with nothing reused, then ``--repeat`` times (the dashboard reuses an answer while
the window's n is unchanged). Staged reports are folded into the sums before the timing.
Prints one line per page, then the JSON API's own functions on the same questions.
``--hh`` fills only the hh task (its share of ``--reports``) and times discovery alone: the
first call (the first read after the fold) and the repeated ones, as ``make bench`` does.
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from flask import current_app

from ldp_telemetry.aggregator import create_app
from ldp_telemetry.aggregator.api.resources import get_store
from ldp_telemetry.aggregator.core.analysis import estimates, heavy_hitters
from ldp_telemetry.aggregator.core.analysis.query import Window
from ldp_telemetry.aggregator.store import StoredTask
from ldp_telemetry.shared import Envelope, TaskConfig, new_report_id

HOUR, BUCKETS, BATCH = 3600, 24, 5000
WORDS = ("hello", "thanks", "please", "sorry", "lunch", "coffee", "later", "maybe", "movie")
TOKEN = "benchmark-analyst-token"


def task_params(index: int, count: int) -> dict[str, Any]:
    """Return task ``index``'s parameters: three large tasks, then rr, grr and cms in turn."""
    common = {"time_precision": HOUR, "min_batch_size": 100}
    if index == 0:
        return {
            "task_id": "big-cms",
            "mechanism": "cms",
            "epsilon": 4.0,
            "k": 1024,
            "m": 1024,
            **common,
        }
    if index == 1:
        hh = {"alphabet": "abcdefghijklmnopqrstuvwxyz", "max_length": 8}
        return {
            "task_id": "big-hh",
            "mechanism": "hh",
            "epsilon": 4.0,
            "k": 1024,
            "m": 1024,
            **hh,
            **common,
        }
    if index == 2:
        return {"task_id": "big-rr", "mechanism": "rr", "epsilon": 1.0, **common}
    kind = ("rr", "grr", "cms")[index % 3]
    extras: dict[str, dict[str, Any]] = {
        "rr": {},
        "grr": {"domain": list(WORDS)},
        "cms": {"k": 256, "m": 256},
    }
    extra = extras[kind]
    return {"task_id": f"task-{index:03d}", "mechanism": kind, "epsilon": 2.0, **extra, **common}


def shares(tasks: int, reports: int) -> list[int]:
    """Return each task's report count (half, a fifth and a tenth to the three large ones)."""
    large = [reports // 2, reports // 5, reports // 10]
    rest = max(0, reports - sum(large))
    small = [rest // max(1, tasks - 3)] * (tasks - 3)
    return (large + small)[:tasks]


def values(task: TaskConfig, count: int, rng: np.random.Generator) -> list[Any]:
    """Return true values: Zipf over a few words (yes with probability 0.3 for rr)."""
    if task.mechanism == "rr":
        return [bool(x) for x in rng.random(count) < 0.3]
    weights = 1.0 / np.arange(1, len(WORDS) + 1) ** 1.1
    return [WORDS[i] for i in rng.choice(len(WORDS), size=count, p=weights / weights.sum())]


def fill(task: TaskConfig, count: int, rng: np.random.Generator, now: float) -> None:
    """Add ``count`` privatized reports spread over the task's 24 latest buckets."""
    store = get_store()
    for bucket_index in range(BUCKETS):
        bucket = task.floor_time(now - bucket_index * HOUR)
        share = count // BUCKETS + (1 if bucket_index < count % BUCKETS else 0)
        for start in range(0, share, BATCH):
            size = min(BATCH, share - start)
            batch: Any = task.mechanism_object.privatize_many(values(task, size, rng), rng)
            reports = (
                [batch.report(i) for i in range(size)]
                if hasattr(batch, "report")
                else [int(x) for x in batch]
            )
            envelopes = [Envelope(new_report_id(), task.fingerprint, bucket, r) for r in reports]
            store.add_reports(task, envelopes, [bucket + 8 * 24 * HOUR] * size)


def timed(client: Any, path: str, repeat: int) -> list[float]:
    """Return the seconds each of ``repeat`` GETs of a page took (each must answer 200)."""
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        response = client.get(path)
        seconds.append(time.perf_counter() - started)
        assert response.status_code == 200, (path, response.status_code)
        assert 'role="alert"' not in response.text, (path, response.text[-2000:])
    return seconds


def api_alone(repeat: int) -> dict[str, list[float]]:
    """Return the seconds the API's functions take for the pages' questions."""
    store = get_store()
    cms, hh = store.get_task("big-cms"), store.get_task("big-hh")
    cells = int(current_app.config["MAX_ESTIMATE_CELLS"])
    assert cms is not None and hh is not None
    questions = {
        "estimates, cms task, 9 candidates": lambda: estimates.answer(
            cms.config, list(WORDS), Window(), store, max_cells=cells
        ),
        "heavy hitters, hh task": lambda: heavy_hitters.answer(hh.config, 20, 64, Window(), store),
    }
    out: dict[str, list[float]] = {}
    for name, ask in questions.items():
        out[name] = []
        for _ in range(repeat):
            started = time.perf_counter()
            ask()
            out[name].append(time.perf_counter() - started)
    return out


def hh_discovery(store_reports: int, repeat: int, rng: np.random.Generator) -> dict[str, Any]:
    """Return the seconds heavy-hitter discovery (top 20) takes on the hh task of the store
    ``main`` fills with ``store_reports`` reports (that task alone: a fifth of them, 24
    buckets, folded), each of ``repeat`` times: the first is the first read after the fold
    (nothing reused), the others repeat it."""
    with tempfile.TemporaryDirectory(prefix="ldp-hh-bench-") as folder:
        app = create_app({"DATABASE": str(Path(folder) / "hh.sqlite3")})
        with app.app_context():
            task = TaskConfig.create(**task_params(1, 0))
            get_store().create_task(StoredTask(task))
            count = shares(3, store_reports)[1]
            fill(task, count, rng, time.time())
            get_store().fold_staged(task)
            seconds = []
            for _ in range(repeat):
                started = time.perf_counter()
                heavy_hitters.answer(task, 20, 64, Window(), get_store())
                seconds.append(time.perf_counter() - started)
    return {"reports": count, "buckets": BUCKETS, "seconds": seconds}


def populate(app: Any, tasks: int, reports: int, rng: np.random.Generator) -> None:
    """Create the tasks and add their reports."""
    started, now = time.perf_counter(), time.time()
    with app.app_context():
        for index, count in enumerate(shares(tasks, reports)):
            task = TaskConfig.create(**task_params(index, count))
            get_store().create_task(StoredTask(task))
            fill(task, count, rng, now)
            get_store().fold_staged(task)  # the sums hold every report, as after ingest's folds
    filled = time.perf_counter() - started
    print(f"filled {tasks} tasks, {reports:,} reports in {filled:.0f} s")


def main() -> None:
    """Fill a store, then time every kind of page."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--reports", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--db", type=Path, help="keep the filled SQLite file here (reused if it exists)"
    )
    parser.add_argument("--hh", action="store_true", help="time heavy-hitter discovery alone")
    args = parser.parse_args()
    if args.hh:
        found = hh_discovery(args.reports, args.repeat, np.random.default_rng(args.seed))
        first, *again = found["seconds"]
        print(
            f"heavy-hitter discovery, {found['reports']:,} reports over {found['buckets']} "
            f"buckets: first {first:.3f} s, then median {statistics.median(again or [first]):.3f} s"
        )
        return
    with tempfile.TemporaryDirectory(prefix="ldp-dashboard-bench-") as folder:
        database = args.db or Path(folder) / "bench.sqlite3"
        filled = database.exists()
        app = create_app({"DATABASE": str(database), "ANALYST_TOKEN": TOKEN})
        if not filled:
            populate(app, args.tasks, args.reports, np.random.default_rng(args.seed))
        client = app.test_client()
        form = client.get("/dashboard/login").text
        token = re.search(r'name="csrf_token" value="([^"]+)"', form)
        assert token is not None, "the login page has no CSRF token"
        csrf = token.group(1)
        assert (
            client.post("/dashboard/login", data={"token": TOKEN, "csrf_token": csrf}).status_code
            == 302
        )
        pages = {
            f"task list ({args.tasks} tasks)": "/dashboard/",
            "cms task, 9 candidates, 24 buckets": "/dashboard/tasks/big-cms?candidates="
            + "%0A".join(WORDS),
            "hh task, heavy hitters (as the API)": "/dashboard/tasks/big-hh/heavy-hitters",
            "hh task, top 5 words over time": "/dashboard/tasks/big-hh?candidates="
            + "%0A".join(WORDS[:5]),
            "rr task": "/dashboard/tasks/big-rr",
            "cms task, top estimates CSV": "/dashboard/tasks/big-cms/top.csv?candidates="
            + "%0A".join(WORDS),
            "planner": "/dashboard/plan?domain_size=1000&devices=100000&epsilon=2",
        }
        print(f"{'page':<42} {'first s':>8} {'median s':>9} {'worst s':>8}")
        for name, path in pages.items():
            first = timed(client, path, 1)[0]  # nothing reused yet
            seconds = timed(client, path, args.repeat)  # answers reused while n is unchanged
            median, worst = statistics.median(seconds), max(seconds)
            print(f"{name:<42} {first:>8.3f} {median:>9.3f} {worst:>8.3f}")
        with app.app_context():
            print("the JSON API's own functions, same questions (no page, nothing reused):")
            for name, seconds in api_alone(args.repeat).items():
                print(f"{name:<42} {'':>8} {statistics.median(seconds):>9.3f} {max(seconds):>8.3f}")


if __name__ == "__main__":
    main()
