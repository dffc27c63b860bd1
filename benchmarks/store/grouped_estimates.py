"""What a breakdown costs: an estimate grouped over 20 slices against one ungrouped estimate.

    python -m benchmarks.store.grouped_estimates [--reports-per-slice 5000] [--repeats 7]

A task with two dimensions (4 platforms and 3 versions, each with ``other``: 5 × 4 = 20
slices) on a fresh SQLite store, each slice holding the same number of reports; then the
median time of ``estimates.answer`` (the function behind ``POST /v1/tasks/{id}/estimates``)
without a breakdown, and with ``group_by`` both dimensions (the totals and 20 rows, each
row's sums read with ``read_sums(slices=...)``). Target (issue 38): ≤ 3×.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
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
TASKS: dict[str, dict[str, Any]] = {
    "cms (k = 64, m = 1,024), 50 candidates": {
        "mechanism": "cms", "epsilon": 4.0, "k": 64, "m": 1024, "hash_seed": 7,
    },
    "grr (d = 16)": {"mechanism": "grr", "epsilon": 2.0, "domain": [f"v{i}" for i in range(16)]},
}  # fmt: skip


def fill(store: Store, task: TaskConfig, per_slice: int, rng: np.random.Generator) -> None:
    """Store ``per_slice`` privatized reports in each of the task's 20 slices."""
    store.create_task(StoredTask(task))
    values = [f"v{i}" for i in range(16)]
    bucket = task.floor_time(time.time())
    for index in range(task.slice_count):
        drawn = list(rng.choice(values, per_slice))
        batch: Any = task.mechanism_object.privatize_many(drawn, rng)
        payloads = [
            batch.report(i) if hasattr(batch, "report") else batch[i].item()
            for i in range(per_slice)
        ]
        envelopes = [
            Envelope(new_report_id(), task.fingerprint, bucket, p, index) for p in payloads
        ]
        store.add_reports(task, envelopes, [bucket + 10 * 86_400] * per_slice)
    store.fold_staged(task)


def median_seconds(work: Callable[[], object], repeats: int) -> float:
    """Return the median wall time of ``work`` over ``repeats`` runs (after one warm-up)."""
    work()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def compare(
    store: Store, task: TaskConfig, candidates: list[str] | None, repeats: int
) -> tuple[float, float]:
    """Return the median seconds of one ungrouped estimate and of one grouped over 20 slices."""
    window, grouped = Window(), Breakdown(("platform", "app_version"))
    plain = median_seconds(lambda: estimates.answer(task, candidates, window, store), repeats)
    by = median_seconds(
        lambda: estimates.answer(task, candidates, window, store, breakdown=grouped), repeats
    )
    return plain, by


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.store.grouped_estimates")
    parser.add_argument("--reports-per-slice", type=int, default=5_000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(38)
    print("| task | ungrouped (ms) | grouped over 20 slices (ms) | ratio |")
    print("|:---|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as folder:
        for number, (label, fields) in enumerate(TASKS.items()):
            store = open_store(str(Path(folder) / f"{number}.sqlite3"), DEFAULTS)
            store.initialize()
            task = TaskConfig(
                task_id=f"t{number}", dimensions=DIMENSIONS, min_batch_size=50, **fields
            )
            assert task.slice_count == 20
            fill(store, task, args.reports_per_slice, rng)
            candidates = [f"c{i}" for i in range(34)] + [f"v{i}" for i in range(16)]
            plain, by = compare(store, task, candidates if "cms" in label else None, args.repeats)
            print(f"| {label} | {plain * 1e3:.1f} | {by * 1e3:.1f} | {by / plain:.2f} |")


if __name__ == "__main__":
    main()
