"""What one group commit costs each store: ``add_uploads`` timed without HTTP.

    python -m benchmarks.store.writer [--uploads 8] [--batches 1 10 100] [--groups 300]

Groups of ``--uploads`` uploads of CMS reports (k = m = 1024, every report from the SDK's
privatizer, fresh ids, the current hour's bucket) are committed one after the other, as a
collector's writer thread commits them, into a SQLite store and a PostgreSQL store (the
bundled throwaway server), both with their default durability. The two stores take turns
group by group, so both see the same machine load. Per upload: the median wall time of a
group divided by its uploads, the writer process's CPU time (the pool's threads included)
and, for PostgreSQL, the CPU time of the server's processes (read from /proc: the server runs
on this machine), both as totals over the run divided by the uploads committed. No fold runs
(``staged_bytes`` is out of reach): SQLite folds on the writer thread, PostgreSQL beside it,
so process CPU around a commit would count one and not the other; ``cluster_ingest``
includes them.
``--general-path`` adds a PostgreSQL store that commits every group the way a group holding
a replayed id is committed (:mod:`ldp_telemetry.aggregator.store.postgres.writer`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks.serving.bench import zipf_values
from demo.postgres import PostgresServer
from ldp_telemetry.aggregator.store.base import SqlStore
from ldp_telemetry.aggregator.store.interface import StoredTask, Upload
from ldp_telemetry.aggregator.store.postgres.backend import PostgresStore
from ldp_telemetry.aggregator.store.sqlite.backend import SqliteStore
from ldp_telemetry.shared import Envelope, TaskConfig, new_report_id

TICK = os.sysconf("SC_CLK_TCK")
NO_FOLD = 1 << 62  # staged bytes: never reached
WINDOW = 7 * 86_400  # ids are remembered this long after their bucket


def _task(batch: int) -> TaskConfig:
    return TaskConfig.create(
        task_id=f"writer-{batch}", mechanism="cms", epsilon=4.0, k=1024, m=1024, min_batch_size=1
    )


def upload_groups(task: TaskConfig, uploads: int, batch: int, groups: int) -> list[list[Upload]]:
    """Return ``groups`` groups of ``uploads`` uploads of ``batch`` fresh reports each."""
    rng = np.random.default_rng(batch)
    total = uploads * batch * groups
    reports = task.mechanism_object.privatize_many(zipf_values(total, rng), rng)
    bucket = task.floor_time(time.time())
    expires = bucket + task.time_precision + WINDOW
    envelopes = [
        Envelope(new_report_id(), task.fingerprint, bucket, reports.report(i)) for i in range(total)
    ]
    cut = [envelopes[i : i + batch] for i in range(0, total, batch)]
    made = [Upload(task, part, [expires] * len(part)) for part in cut]
    return [made[i : i + uploads] for i in range(0, len(made), uploads)]


def _server_ticks(root: int) -> int:
    """Return the CPU ticks of a process and its descendants (PostgreSQL's backends)."""
    children: dict[int, list[int]] = {}
    ticks: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(entry))
        ticks[int(entry)] = int(fields[11]) + int(fields[12])
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += ticks.get(pid, 0)
        todo += children.get(pid, [])
    return total


def _postmaster(data: Path) -> int:
    return int((data / "postmaster.pid").read_text().split()[0])


class _GeneralPath(PostgresStore):
    """PostgreSQL committing every group as a group with a replay is committed."""

    add_uploads = SqlStore.add_uploads


class _Runner:
    """One store under test: its groups, and the time and CPU they took."""

    def __init__(
        self, name: str, store: SqlStore, groups: list[list[Upload]], ticks: Callable[[], int]
    ) -> None:
        self.name, self.store, self.groups, self.ticks = name, store, groups, ticks
        self.walls: list[float] = []
        self.cpu = self.server = 0.0

    def step(self, index: int) -> None:
        group = self.groups[index]
        server, cpu, wall = self.ticks(), time.process_time(), time.perf_counter()
        self.store.add_uploads(group)
        self.walls.append((time.perf_counter() - wall) / len(group))
        self.cpu += time.process_time() - cpu
        self.server += (self.ticks() - server) / TICK

    def row(self, uploads: int) -> str:
        committed = uploads * len(self.walls)
        return (
            f"{self.name}: {statistics.median(self.walls) * 1e6:,.0f} µs wall, "
            f"{self.cpu / committed * 1e6:,.0f} µs writer CPU, "
            f"{self.server / committed * 1e6:,.0f} µs server CPU"
        )


def _stores(
    postgres: PostgresServer, folder: Path, batch: int, general_path: bool
) -> list[tuple[str, SqlStore, Callable[[], int]]]:
    """Return (name, store, its server's CPU ticks) of each store under test, not initialized."""
    data = postgres.folder / "data"

    def server() -> int:
        return _server_ticks(_postmaster(data))

    stores: list[tuple[str, SqlStore, Callable[[], int]]] = [
        ("SQLite", SqliteStore(str(folder / f"{batch}.sqlite3"), staged_bytes=NO_FOLD), lambda: 0),
        ("PostgreSQL", PostgresStore(postgres.new_database(), staged_bytes=NO_FOLD), server),
    ]
    if general_path:
        general = _GeneralPath(postgres.new_database(), staged_bytes=NO_FOLD)
        stores.append(("PostgreSQL, general path", general, server))
    return stores


def main() -> None:
    """Time both stores' group commits, alternating, and print one line per store and size."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--uploads", type=int, default=8, help="uploads per group")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--groups", type=int, default=300)
    parser.add_argument(
        "--general-path",
        action="store_true",
        help="also time PostgreSQL's general path (what a group holding a replay takes)",
    )
    args = parser.parse_args()
    postgres = PostgresServer()
    try:
        with tempfile.TemporaryDirectory(prefix="ldp-writer-bench-") as folder:
            for batch in args.batches:
                task = _task(batch)
                runners = []
                for name, store, ticks in _stores(postgres, Path(folder), batch, args.general_path):
                    store.initialize()
                    store.create_task(StoredTask(task, None, False))
                    groups = upload_groups(task, args.uploads, batch, args.groups)
                    runners.append(_Runner(name, store, groups, ticks))
                for index in range(args.groups):
                    for runner in runners:
                        runner.step(index)
                load = os.getloadavg()[0]
                print(f"{batch} report(s) per upload, {args.uploads} per group (load {load:.1f})")
                for runner in runners:
                    print("  " + runner.row(args.uploads))
                    if isinstance(runner.store, PostgresStore):
                        runner.store.close()
    finally:
        postgres.stop()


if __name__ == "__main__":
    main()
