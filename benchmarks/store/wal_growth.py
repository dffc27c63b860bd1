"""The SQLite WAL under sustained load: its size while 2 workers take uploads non-stop.

    python -m benchmarks.store.wal_growth [--seconds 120]

Runs ``ldp-aggregator serve --workers 2`` on a temporary database, posts 500-report CMS
batches with fresh report ids over 16 connections (wrk when installed, else Python
threads) for the given time, samples the WAL's size every second and prints its maximum
and the database's final size. SQLite's own automatic checkpoints cannot reset a WAL that
writers keep busy; the store's checkpointer (ldp_telemetry.aggregator.store.sqlite.checkpoint)
restarts it and journal_size_limit trims it (target: ≤ 64 MiB; 64.0 MiB in 40 s, 2026-11-30).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
from pathlib import Path

import numpy as np

from benchmarks.serving import http_ingest, loadgen
from benchmarks.serving.bench import upload_templates


def main() -> None:
    """Run the load and print the WAL's maximum and the database's size."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=120.0)
    args = parser.parse_args()
    with (
        http_ingest.running_server(2) as server,
        tempfile.TemporaryDirectory(prefix="ldp-wal-") as folder,
    ):
        assert server.db is not None
        task = http_ingest.create_task(server, "wal")
        body = upload_templates(task, 500, np.random.default_rng(7))
        sizes: list[int] = []
        done = threading.Event()

        def sample() -> None:
            while not done.wait(1.0):
                sizes.append(_size(f"{server.db}-wal"))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        load = loadgen.run(
            server.url, "/v1/tasks/wal/reports", body, 16, args.seconds, Path(folder)
        )
        done.set()
        sampler.join(5)
        print(
            f"{args.seconds:.0f} s of 500-report uploads, 2 workers ({load.tool}): "
            f"{load.requests_per_s * 500:,.0f} reports/s, {load.non_2xx} non-2xx; "
            f"WAL max {max(sizes, default=0) / 2**20:.1f} MiB, final "
            f"{_size(f'{server.db}-wal') / 2**20:.1f} MiB; database "
            f"{_size(str(server.db)) / 2**20:.1f} MiB"
        )


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


if __name__ == "__main__":
    main()
