"""What a breakdown costs: an estimate grouped over 20 slices against one ungrouped estimate.

    python -m benchmarks.store.grouped_estimates [--reports-per-slice 5000] [--repeats 7]
        [--stores sqlite,postgres] [--kinds rr,grr,oue,cms,numeric] [--numeric-statistics mean]

A task of each kind with two dimensions (4 platforms and 3 versions, each with ``other``:
5 × 4 = 20 slices) on a fresh store (SQLite, and PostgreSQL on a throwaway server), each
slice holding the same number of reports, folded; then the median time of
``estimates.answer`` (the function behind ``POST /v1/tasks/{id}/estimates``) without a
breakdown, and with ``group_by`` both dimensions (the totals and 20 rows, all from one
``read_slices``), alternating. Target (issue 38): ≤ 3×.

``--row-cost``: instead, the CPU of one numeric estimate of a slice's reports (2,000 by
default) as the totals get it (``SquareWave.estimate``) against as a breakdown's row gets it
(``estimate_rows``: the same refit searches side by side), alternating, no store.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ldp_telemetry.aggregator.core.analysis import estimates
from ldp_telemetry.aggregator.core.analysis.query import Breakdown, Window
from ldp_telemetry.aggregator.core.config import DEFAULTS
from ldp_telemetry.aggregator.store import Store, StoredTask
from ldp_telemetry.aggregator.store.backends import open_store
from ldp_telemetry.shared import Envelope, TaskConfig, new_report_id

DIMENSIONS = [
    {"name": "platform", "values": ["android", "ios", "web", "tv"]},
    {"name": "app_version", "values": ["5.1", "5.2", "5.3"]},
]
DOMAIN = [f"v{i}" for i in range(16)]
TASKS: dict[str, dict[str, Any]] = {
    "rr": {"mechanism": "rr", "epsilon": 1.0},
    "grr": {"mechanism": "grr", "epsilon": 2.0, "domain": DOMAIN},
    "oue": {"mechanism": "oue", "epsilon": 2.0, "domain": DOMAIN},
    "cms": {"mechanism": "cms", "epsilon": 4.0, "k": 64, "m": 1024, "hash_seed": 7},
    "numeric": {"mechanism": "numeric", "epsilon": 2.0, "lo": 0.0, "hi": 100.0},
}
LABELS = {
    "rr": "rr",
    "grr": "grr (d = 16)",
    "oue": "oue (d = 16)",
    "cms": "cms (k = 64, m = 1,024), 50 candidates",
    "numeric": "numeric (lo = 0, hi = 100)",
}
CANDIDATES = {"cms": [f"c{i}" for i in range(34)] + DOMAIN}


def device_values(kind: str, count: int, rng: np.random.Generator) -> list[Any]:
    """Return ``count`` device values of a task of ``kind``."""
    if kind == "rr":
        return [bool(v) for v in rng.random(count) < 0.3]
    if kind == "numeric":
        return [float(v) for v in rng.uniform(0.0, 100.0, count)]
    return list(rng.choice(DOMAIN, count))


def fill(store: Store, task: TaskConfig, per_slice: int, rng: np.random.Generator) -> None:
    """Store ``per_slice`` privatized reports in each of the task's 20 slices, folded."""
    store.create_task(StoredTask(task))
    mechanism = task.mechanism_object
    bucket = task.floor_time(time.time())
    for index in range(task.slice_count):
        payloads = [
            mechanism.privatize(value, rng)
            for value in device_values(task.mechanism, per_slice, rng)
        ]
        envelopes = [
            Envelope(new_report_id(), task.fingerprint, bucket, p, index) for p in payloads
        ]
        store.add_reports(task, envelopes, [bucket + 10 * 86_400] * per_slice)
    store.fold_staged(task)


def median_seconds(works: list[Callable[[], object]], repeats: int) -> list[tuple[float, float]]:
    """Return the median (wall, CPU) seconds of each of ``works``, run alternately
    ``repeats`` times after one warm-up each, so that the machine's load weighs on all alike
    (CPU: this process's, which other sessions' load does not inflate; a PostgreSQL
    server's own CPU is not in it)."""
    for work in works:
        work()
    times: list[list[tuple[float, float]]] = [[] for _ in works]
    for _ in range(repeats):
        for spent, work in zip(times, works, strict=True):
            wall, cpu = time.perf_counter(), time.process_time()
            work()
            spent.append((time.perf_counter() - wall, time.process_time() - cpu))
    return [
        (statistics.median(w for w, _ in spent), statistics.median(c for _, c in spent))
        for spent in times
    ]


def compare(
    store: Store, task: TaskConfig, repeats: int, candidates: list[str] | None = None
) -> tuple[tuple[float, float], tuple[float, float]]:
    """Return the median (wall, CPU) seconds of one ungrouped estimate and of one grouped
    over 20 slices (``candidates``: what the query asks; None: the kind's default)."""
    window, grouped = Window(), Breakdown(("platform", "app_version"))
    candidates = candidates or CANDIDATES.get(task.mechanism)
    plain, by = median_seconds(
        [
            lambda: estimates.answer(task, candidates, window, store),
            lambda: estimates.answer(task, candidates, window, store, breakdown=grouped),
        ],
        repeats,
    )
    return plain, by


@contextmanager
def stores(folder: Path) -> Iterator[Callable[[str, int], Store]]:
    """Yield a function opening a fresh store of a backend (PostgreSQL: one throwaway server)."""
    with ExitStack() as stack:
        server: Any = None

        def fresh(name: str, number: int) -> Store:
            nonlocal server
            if name == "sqlite":
                url = str(folder / f"{number}.sqlite3")
            else:
                if server is None:
                    from demo.postgres import PostgresServer  # pgserver: the developer extra

                    server = PostgresServer()
                    stack.callback(server.stop)
                url = server.new_database()
            store = open_store(url, DEFAULTS)
            store.initialize()
            closing = getattr(store, "close", None)
            if closing is not None:
                stack.callback(closing)
            return store

        yield fresh


def row_cost(per_slice: int, repeats: int) -> None:
    """Print the median CPU of a numeric estimate of one slice as the totals and as a row."""
    task = TaskConfig(task_id="row", dimensions=DIMENSIONS, **TASKS["numeric"])
    mechanism: Any = task.mechanism_object
    rng = np.random.default_rng(38)
    sums = mechanism.new_sums()
    sums.add_many(mechanism.privatize_many(device_values("numeric", per_slice, rng), rng))
    full, row = median_seconds(
        [lambda: mechanism.estimate(sums), lambda: mechanism.estimate_rows([sums])], repeats
    )
    print(f"| {LABELS['numeric']}, {per_slice:,} reports | {full[1] * 1e3:.0f} ", end="")
    print(f"| {row[1] * 1e3:.0f} | {full[1] / row[1]:.1f} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.store.grouped_estimates")
    parser.add_argument("--reports-per-slice", type=int, default=5_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--kinds", default=",".join(TASKS))
    parser.add_argument("--row-cost", action="store_true", help="a numeric row alone")
    parser.add_argument(
        "--numeric-statistics",
        help="comma-separated statistics a numeric estimate asks for, e.g. mean "
        "(default: the default query: mean, percentiles, end buckets)",
    )
    args = parser.parse_args(argv)
    asked = args.numeric_statistics.split(",") if args.numeric_statistics else None
    if args.row_cost:
        print("| task | as the totals (ms CPU) | as a row (ms CPU) | ratio |")
        print("|:---|---:|---:|---:|")
        row_cost(args.reports_per_slice, args.repeats)
        return
    print(
        "| store | task | ungrouped (ms) | grouped over 20 slices (ms) | ratio "
        "| ratio of CPU times |"
    )
    print("|:---|:---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as folder, stores(Path(folder)) as fresh:
        number = 0
        for backend in args.stores.split(","):
            for kind in args.kinds.split(","):
                number += 1
                store = fresh(backend, number)
                task = TaskConfig(
                    task_id=f"t{number}", dimensions=DIMENSIONS, min_batch_size=50, **TASKS[kind]
                )
                assert task.slice_count == 20
                # the same reports on every store (a numeric estimate's cost depends on its data:
                # filled from one stream, PostgreSQL's data differed from SQLite's)
                fill(
                    store,
                    task,
                    args.reports_per_slice,
                    np.random.default_rng([38, list(TASKS).index(kind)]),
                )
                plain, by = compare(store, task, args.repeats, asked if kind == "numeric" else None)
                label = (
                    f"{LABELS[kind]}: {', '.join(asked)}"
                    if asked and kind == "numeric"
                    else LABELS[kind]
                )
                print(
                    f"| {backend} | {label} | {plain[0] * 1e3:.2f} | {by[0] * 1e3:.2f} "
                    f"| {by[0] / plain[0]:.2f} | {by[1] / plain[1]:.2f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
