"""Measure the collector (not a test): estimate latency and HTTP ingest throughput.

Run: ``.venv/bin/python -m tests.aggregator.bench_aggregator [--seed 1] [--workers 2]``.
Starts ``ldp-aggregator serve`` on a temp database, fills a k=2048, m=1024 sketch, times
estimates for 10,000 candidates, then posts pre-encoded batches of 500 reports from
several threads and reports the durable ingest rate (every 200 follows a commit).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from ldp_telemetry.shared import TaskConfig, encode_batch
from tests.support.reports import create_task, envelopes, estimates, payloads, post_reports
from tests.support.servers import start_server

BATCH = 500


def bodies(task: TaskConfig, count: int, rng: np.random.Generator) -> list[bytes]:
    values = [f"item-{int(i)}" for i in rng.zipf(1.3, count) % 50_000]
    batch = envelopes(task, payloads(task, values, rng))
    return [encode_batch(task, batch[i : i + BATCH]) for i in range(0, count, BATCH)]


def ingest(url: str, task_id: str, data: list[bytes], threads: int) -> float:
    started = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        answers = list(pool.map(lambda b: post_reports(url, task_id, b).json(), data))
    elapsed = time.perf_counter() - started
    assert sum(a["accepted"] for a in answers) == BATCH * len(data)
    return BATCH * len(data) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--reports", type=int, default=100_000)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    with tempfile.TemporaryDirectory() as folder:
        server = start_server(Path(folder) / "bench.sqlite3", workers=args.workers)
        try:
            for mechanism in ("cms", "hcms", "rr"):
                sketch = {"k": 2048, "m": 1024} if mechanism != "rr" else {}
                task = create_task(
                    server.url,
                    task_id=f"bench-{mechanism}",
                    mechanism=mechanism,
                    epsilon=4.0,
                    **sketch,
                )
                data = (
                    bodies(task, args.reports, rng)
                    if mechanism != "rr"
                    else [
                        encode_batch(
                            task,
                            envelopes(task, payloads(task, list(rng.random(BATCH) < 0.3), rng)),
                        )
                        for _ in range(args.reports // BATCH)
                    ]
                )
                rate = ingest(server.url, task.task_id, data, args.threads)
                print(
                    f"{mechanism}: ingest {rate:,.0f} reports/s ({args.reports:,} reports, "
                    f"batches of {BATCH}, {args.threads} threads, {args.workers} workers)"
                )
                if mechanism == "rr":
                    continue
                candidates = [f"item-{i}" for i in range(10_000)]
                for when in ("first, folds the staged reports", "again"):
                    started = time.perf_counter()
                    response = estimates(server.url, task.task_id, candidates=candidates)
                    elapsed = time.perf_counter() - started
                    assert response.status_code == 200, response.text
                    print(
                        f"{mechanism}: estimates for 10,000 candidates, k=2048, m=1024, "
                        f"n={response.json()['n']:,}: {elapsed:.3f} s over HTTP ({when})"
                    )
        finally:
            server.kill()


if __name__ == "__main__":
    main()
