"""record() latency on the caller's thread: median, p99 and max over 5,000 calls.

    python -m benchmarks.client.record_latency

With the in-memory queue and with the on-disk queue (data_dir), while the SDK's own
thread uploads to an in-memory collector: what an app's thread pays per record.
"""

from __future__ import annotations

import statistics
import tempfile
import time

from ldp_telemetry.client import Client, InMemoryTransport
from ldp_telemetry.shared import TaskConfig

CALLS = 5000


def measure(data_dir: str | None) -> tuple[float, float, float]:
    """Return (median, p99, max) of record() in seconds."""
    task = TaskConfig.create(task_id="t-cms", mechanism="cms", epsilon=4.0, k=1024, m=1024)
    sdk = Client(
        "memory://bench",
        transport=InMemoryTransport([task]),
        task_ids=["t-cms"],
        data_dir=data_dir,
        reports_per_period=None,
        atexit_timeout=None,
        max_queue=CALLS * 2,
    )
    assert sdk.wait_for_tasks(timeout=10)
    durations = []
    for i in range(CALLS):
        start = time.perf_counter()
        sdk.record("t-cms", f"value-{i}")
        durations.append(time.perf_counter() - start)
    sdk.close(30)
    durations.sort()
    return statistics.median(durations), durations[int(0.99 * CALLS)], durations[-1]


def main() -> None:
    """Print one line per queue kind."""
    with tempfile.TemporaryDirectory() as folder:
        for name, data_dir in (("memory queue", None), ("disk queue", folder)):
            median, p99, worst = measure(data_dir)
            print(
                f"{name}: record() median {median * 1e6:.0f} µs, p99 {p99 * 1e6:.0f} µs, "
                f"max {worst * 1e3:.1f} ms ({CALLS} calls, CMS k = m = 1024)"
            )


if __name__ == "__main__":
    main()
