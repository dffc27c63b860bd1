"""How fast the shuffler forwards: spooled reports → shuffled batches → a real collector.

``python -m benchmarks.serving.shuffler_forward [--reports N] [--uploads U] [--runs R]`` starts a
collector (``ldp-aggregator serve``, default server, one worker, SQLite WAL), creates a CMS
task (k = 2048, m = 1024, ε = 4: about 260 bytes of JSON a report) and a shuffler token,
fills a fresh spool with N reports from U uploads (untimed), then times the shuffler's own
forwarder (ldp_telemetry.shuffler.forwarder, the code the process runs) while it claims
batches of up to 5,000 reports from ≥ 1,000 uploads, shuffles them with the OS CSPRNG,
PUTs them and marks them forwarded after each 2xx. Two rates, medians of R runs: N over
the wall time (the collector's ingest included: on a shared machine, a lower bound) and N
over the shuffler's own CPU time (robust to other load, as the other benchmarks measure).
Each run checks that the collector counted every report once.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import requests

from benchmarks.serving.http_ingest import create_task, running_server
from ldp_telemetry.shared import TaskConfig, encode_batch
from ldp_telemetry.shared.codec import Envelope, new_report_id
from ldp_telemetry.shuffler.forwarder import Forwarder
from ldp_telemetry.shuffler.spool import Report, Spool

BATCH_MIN, BATCH_MAX = 1000, 5000


def spooled_reports(task: TaskConfig, count: int, uploads: int, spool: Spool) -> None:
    """Fill ``spool`` with ``count`` fresh reports of ``task`` in ``uploads`` uploads."""
    mechanism = task.mechanism_object
    rng = np.random.default_rng(28)
    values = [f"item-{i}" for i in rng.integers(0, 1000, count)]
    batch = mechanism.privatize_many(values, rng)
    bucket = task.floor_time(time.time())
    envelopes = [
        Envelope(new_report_id(), task.fingerprint, bucket, batch.report(i)) for i in range(count)
    ]
    objects = json.loads(encode_batch(task, envelopes))["reports"]
    per_upload = max(1, count // uploads)
    for start in range(0, count, per_upload):
        part = zip(
            envelopes[start : start + per_upload], objects[start : start + per_upload], strict=True
        )
        spool.add(
            [
                Report(e.report_id, "bench", bucket, bucket + 86400, json.dumps(o).encode())
                for e, o in part
            ]
        )


def shuffler_token(db: Path) -> str:
    """Create a shuffler token in the collector's database (the CLI)."""
    command = ["--db", str(db), "tokens", "create", "--role", "shuffler"]
    done = subprocess.run(
        [sys.executable, "-m", "ldp_telemetry.aggregator.cli", *command],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout.strip()


def counted(url: str, analyst: str) -> int:
    """Return n of the task's estimates over all time."""
    answer = requests.post(
        f"{url}/v1/tasks/bench/estimates",
        json={"candidates": ["item-1"]},
        headers={"Authorization": f"Bearer {analyst}"},
        timeout=120,
    )
    answer.raise_for_status()
    return int(answer.json()["n"])


def run(reports: int, uploads: int, runs: int) -> dict[str, float]:
    """Return the median forwarding rate (reports/s) over ``runs`` fresh spools."""
    rates, cpu_rates = [], []
    with running_server(1) as server, tempfile.TemporaryDirectory() as folder:
        assert server.db is not None
        task = create_task(server, "bench")
        token = shuffler_token(server.db)
        for attempt in range(runs):
            spool = Spool(str(Path(folder) / f"spool-{attempt}.sqlite3"), capacity=10 * reports)
            spooled_reports(task, reports, uploads, spool)
            forwarder = Forwarder(
                spool,
                upstream=server.url,
                token=token,
                batch_min=BATCH_MIN,
                batch_max=BATCH_MAX,
            )
            started, cpu = time.perf_counter(), time.process_time()
            sent = forwarder.forward_ready()
            elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
            if sent != reports or spool.pending:
                raise RuntimeError(f"forwarded {sent} of {reports} ({spool.pending} waiting)")
            rates.append(reports / elapsed)
            cpu_rates.append(reports / cpu)
        total = counted(server.url, server.analyst)
        if total != runs * reports:
            raise RuntimeError(f"the collector counted {total}, expected {runs * reports}")
    return {
        "reports": reports,
        "uploads": uploads,
        "reports_per_s": statistics.median(rates),  # wall time, collector included
        "reports_per_shuffler_cpu_s": statistics.median(cpu_rates),  # the shuffler's CPU only
    }


def main() -> None:
    """Print the median forwarding rate as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=100_000)
    parser.add_argument("--uploads", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps(run(args.reports, args.uploads, args.runs)))


if __name__ == "__main__":
    main()
