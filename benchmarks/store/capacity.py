"""What one report costs a PostgreSQL server: the numbers behind the capacity table.

    python -m benchmarks.store.capacity [--seconds 20] [--batches 1 10 100] [--nodes 2]
        [--postgres-setting NAME=VALUE ...]

Starts a throwaway PostgreSQL 16 (the tests' and ``make demo-cluster``'s) and ``--nodes``
collector nodes (``serve --workers 1`` each) on it, then for each upload size posts CMS
reports (k = 2048, m = 1024, fresh report ids on every request) for ``--seconds`` and
measures, per report counted:

- PostgreSQL CPU: user + system time of this server's processes (the postmaster with its
  reaped children, and its live backends), read from /proc before and after;
- collector CPU: the same for the nodes' process groups;
- WAL bytes: ``pg_wal_lsn_diff`` of ``pg_current_wal_lsn()`` before and after;
- ``seen`` growth: heap and index bytes (``pg_relation_size``, ``pg_indexes_size``), the
  table that holds every report id until its acceptance window closes;
- ``sums`` growth (it grows per task and bucket, not per report: ~0 once a bucket exists).

CPU time, bytes and counts do not depend on how busy the machine is the way a rate does,
so these figures survive a shared machine better than reports/s; the rates derived from
them (reports/s per PostgreSQL core = 1 / CPU per report) are upper bounds that assume
PostgreSQL's CPU, not its disk flushes, is what runs out (docs/operations.md says when not).
"""

from __future__ import annotations

import argparse
import os
import secrets
import tempfile
import threading
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psycopg
import psycopg.sql
import requests

from benchmarks.serving import http_ingest, loadgen
from benchmarks.serving.bench import upload_templates
from demo.postgres import PostgresServer

CONNECTIONS = 16
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Sample:
    """Counters read at one instant."""

    postgres_cpu: float  # seconds
    nodes_cpu: float  # seconds
    wal: int  # bytes since the cluster began (an LSN)
    seen_heap: int
    seen_index: int
    sums: int


@dataclass(frozen=True)
class PerReport:
    """Costs per counted report over one run."""

    batch: int
    reports: int
    reports_per_s: float
    postgres_cpu_us: float
    nodes_cpu_us: float
    wal_bytes: float
    seen_heap_bytes: float
    seen_index_bytes: float
    sums_bytes: float
    uploads_per_commit: float  # the nodes' mean group commit (ldp_group_commit_uploads)


def _cpu_of(pid: int, reaped: bool) -> float:
    """Return a process's user + system seconds (and its reaped children's if asked)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    # after the command: state is field 3, so utime (14) .. cstime (17) are [11:15]
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    return (utime + stime + ((cutime + cstime) if reaped else 0)) / TICKS


def _postgres_cpu(postmaster: int) -> float:
    """This server's CPU: its postmaster's (with its reaped children's) and its live
    backends'. Only this server's: another PostgreSQL on the machine (a test suite's)
    would add its work, and subtract it when its processes end."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (FileNotFoundError, ProcessLookupError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry.name))
    total, todo = _cpu_of(postmaster, reaped=True), list(children.get(postmaster, []))
    while todo:
        pid = todo.pop()
        total += _cpu_of(pid, reaped=False)
        todo += children.get(pid, [])
    return total


def _group_cpu(group: int) -> float:
    """The CPU of every live process in a process group, with its reaped children's."""
    total = 0.0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and _group_of(int(entry.name)) == group:
            total += _cpu_of(int(entry.name), reaped=True)
    return total


def _group_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except (ProcessLookupError, PermissionError):
        return None


def _sample(database: str | None, groups: list[int], postmaster: int = 0) -> Sample:
    nodes_cpu = sum(_group_cpu(group) for group in groups)
    if database is None:  # a SQLite node: its own CPU is all there is
        return Sample(0.0, nodes_cpu, 0, 0, 0, 0)
    with psycopg.connect(database, autocommit=True) as conn:
        row = conn.execute(
            "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint,"
            " pg_relation_size('seen'), pg_indexes_size('seen'),"
            " pg_total_relation_size('sums')"
        ).fetchone()
    assert row is not None
    return Sample(
        postgres_cpu=_postgres_cpu(postmaster),
        nodes_cpu=nodes_cpu,
        wal=int(row[0]),
        seen_heap=int(row[1]),
        seen_index=int(row[2]),
        sums=int(row[3]),
    )


def _counted(node: http_ingest.Server, task_id: str) -> int:
    response = requests.post(
        f"{node.url}/v1/tasks/{task_id}/estimates",
        json={"candidates": ["x"]},
        headers={"Authorization": f"Bearer {node.analyst}"},
        timeout=600,
    )
    return int(response.json().get("n", 0))


def _commits(nodes: list[http_ingest.Server]) -> tuple[float, float]:
    """Return the nodes' uploads committed and group commits so far (from /metrics)."""
    uploads = commits = 0.0
    for node in nodes:
        for line in requests.get(f"{node.url}/metrics", timeout=60).text.splitlines():
            if line.startswith("ldp_group_commit_uploads_sum"):
                uploads += float(line.split()[-1])
            elif line.startswith("ldp_group_commit_uploads_count"):
                commits += float(line.split()[-1])
    return uploads, commits


def measure(
    nodes: list[http_ingest.Server],
    database: str | None,
    batch: int,
    seconds: float,
    folder: Path,
    postmaster: int = 0,
) -> PerReport:
    """Post ``batch``-report uploads to every node for ``seconds``; return costs per report."""
    task_id = f"capacity-{batch}-{secrets.token_hex(3)}"
    task = http_ingest.create_task(nodes[0], task_id)
    body = upload_templates(task, batch, np.random.default_rng(batch))
    groups = [node.process.pid for node in nodes]  # each node leads its own session
    loads: list[loadgen.Load] = []

    def one(node: http_ingest.Server, index: int) -> None:
        scratch = folder / f"{task_id}-{index}"
        scratch.mkdir()
        path = f"/v1/tasks/{task_id}/reports"
        loads.append(loadgen.run(node.url, path, body, CONNECTIONS // len(nodes), seconds, scratch))

    before, commits_before = _sample(database, groups, postmaster), _commits(nodes)
    threads = [threading.Thread(target=one, args=(n, i)) for i, n in enumerate(nodes)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    after, commits_after = _sample(database, groups, postmaster), _commits(nodes)
    reports = _counted(nodes[0], task_id)
    if reports == 0:
        raise RuntimeError(f"no report of {task_id} was counted: see the nodes' logs")
    return PerReport(
        batch=batch,
        reports=reports,
        reports_per_s=sum(load.requests_per_s for load in loads) * batch,
        postgres_cpu_us=(after.postgres_cpu - before.postgres_cpu) / reports * 1e6,
        nodes_cpu_us=(after.nodes_cpu - before.nodes_cpu) / reports * 1e6,
        wal_bytes=(after.wal - before.wal) / reports,
        seen_heap_bytes=(after.seen_heap - before.seen_heap) / reports,
        seen_index_bytes=(after.seen_index - before.seen_index) / reports,
        sums_bytes=(after.sums - before.sums) / reports,
        uploads_per_commit=(commits_after[0] - commits_before[0])
        / max(1.0, commits_after[1] - commits_before[1]),
    )


def print_table(rows: list[PerReport], nodes: int, sqlite: dict[int, PerReport]) -> None:
    """Print the measured costs and what follows from them for one PostgreSQL server."""
    print(
        "| reports per request | CPU per report: 1 SQLite node | PostgreSQL nodes + PostgreSQL "
        "| SQLite / PostgreSQL (the throughput ratio when CPU is what runs out) "
        "| uploads per commit: SQLite node, PostgreSQL nodes |"
    )
    print("|---|---|---|---|---|")
    for row in rows:
        if row.batch in sqlite:
            alone = sqlite[row.batch].nodes_cpu_us
            both = row.nodes_cpu_us + row.postgres_cpu_us
            print(
                f"| {row.batch} | {alone:.0f} µs | {row.nodes_cpu_us:.0f} + "
                f"{row.postgres_cpu_us:.0f} = {both:.0f} µs | {alone / both:.2f}× "
                f"| {sqlite[row.batch].uploads_per_commit:.1f}, {row.uploads_per_commit:.1f} |"
            )
    print()
    print(
        "| reports per request | reports counted (rate) | PostgreSQL CPU per report "
        "| reports/s per PostgreSQL core | collector CPU per report | nodes per PostgreSQL core "
        "| WAL per report | seen per report (heap + index) | seen per 10⁹ reports |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        seen = row.seen_heap_bytes + row.seen_index_bytes
        print(
            f"| {row.batch} | {row.reports:,} ({row.reports_per_s:,.0f}/s over {nodes} nodes) "
            f"| {row.postgres_cpu_us:.0f} µs | {1e6 / row.postgres_cpu_us:,.0f} "
            f"| {row.nodes_cpu_us:.0f} µs | {row.nodes_cpu_us / row.postgres_cpu_us:.1f} "
            f"| {row.wal_bytes:.0f} B | {row.seen_heap_bytes:.0f} + {row.seen_index_bytes:.0f} B "
            f"| {seen * 1e9 / 2**30:.0f} GiB |"
        )


def _configure(admin_url: str, settings: list[str]) -> None:
    """Apply ``NAME=VALUE`` server settings (those a reload takes) to the running server."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        for setting in settings:
            name, _, value = setting.partition("=")
            conn.execute(
                psycopg.sql.SQL("ALTER SYSTEM SET {} = {}").format(
                    psycopg.sql.Identifier(name), psycopg.sql.Literal(value)
                )
            )
        conn.execute("SELECT pg_reload_conf()")


def main() -> None:
    """Start PostgreSQL and the nodes, measure each upload size, print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument(
        "--postgres-setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a server setting (ALTER SYSTEM, reloaded) before the nodes start, e.g. "
        "commit_delay=200; repeatable",
    )
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="ldp-capacity-") as scratch,
        http_ingest.running_server(2) as single,
    ):
        sqlite = {
            batch: measure([single], None, batch, args.seconds, Path(scratch))
            for batch in args.batches
        }
    with ExitStack() as stack:
        postgres = PostgresServer()
        stack.callback(postgres.stop)
        database = postgres.new_database()
        _configure(postgres.admin_url, args.postgres_setting)
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ldp-capacity-")))
        tokens = (secrets.token_urlsafe(24), secrets.token_urlsafe(24))
        nodes = [
            stack.enter_context(http_ingest.running_server(1, database=database, tokens=tokens))
            for _ in range(args.nodes)
        ]
        postmaster = int((postgres.folder / "data" / "postmaster.pid").read_text().split()[0])
        rows = [
            measure(nodes, database, batch, args.seconds, folder, postmaster)
            for batch in args.batches
        ]
    settings = ", ".join(args.postgres_setting) or "PostgreSQL's defaults"
    print(
        f"{args.seconds:.0f} s per row, {CONNECTIONS} connections, {settings}, "
        f"load {os.getloadavg()[0]:.1f}"
    )
    print_table(rows, args.nodes, sqlite)


if __name__ == "__main__":
    main()
