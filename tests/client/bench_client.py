"""Measure the SDK (not a test): record() latency per mechanism, in memory and on disk.

Run: ``.venv/bin/python tests/client/bench_client.py [--records 3000]``.
Times each ``record`` call on the caller's thread (privatize with the OS CSPRNG, budget
check, queueing) for rr and for CMS/HCMS with k=2048, m=1024, distinct values and no
budget limit, with the in-memory queue and with a data_dir (SQLite); the uploader
sends to an in-memory transport meanwhile. Prints median and 99th percentile.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from ldp_telemetry.client import Client, InMemoryTransport
from ldp_telemetry.shared import TaskConfig


def tasks() -> list[TaskConfig]:
    """Return the measured tasks (docs/design.md, Targets: the sketch size m = 1024)."""
    return [
        TaskConfig.create(task_id="rr", mechanism="rr", epsilon=1.0),
        TaskConfig.create(task_id="cms", mechanism="cms", epsilon=4.0, k=2048, m=1024),
        TaskConfig.create(task_id="hcms", mechanism="hcms", epsilon=4.0, k=2048, m=1024),
    ]


def latencies(sdk: Client, task: TaskConfig, records: int) -> list[float]:
    """Return the duration of ``records`` calls of record, in seconds, sorted."""
    sdk.record(task.task_id, True if task.mechanism == "rr" else "warm-up")
    samples = []
    for i in range(records):
        value = (i % 2 == 0) if task.mechanism == "rr" else f"value-{i}"
        start = time.perf_counter()
        sdk.record(task.task_id, value)
        samples.append(time.perf_counter() - start)
    return sorted(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=3000)
    args = parser.parse_args()
    for label, data_dir in (("memory", None), ("sqlite", tempfile.mkdtemp())):
        sdk = Client(
            "memory://bench",
            transport=InMemoryTransport(tasks()),
            data_dir=data_dir,
            reports_per_period=None,
            max_queue=10 * args.records,
            atexit_timeout=None,
        )
        for task in tasks():
            samples = latencies(sdk, task, args.records)
            print(
                f"{label:6} {task.mechanism:4}  median {statistics.median(samples) * 1e6:7.1f} "
                f"us   p99 {samples[int(0.99 * len(samples))] * 1e6:8.1f} us"
            )
        sdk.close(10)


if __name__ == "__main__":
    main()
