"""Ingest of two collector nodes on one PostgreSQL against one node on SQLite, same run.

    python -m benchmarks.store.cluster_ingest [--seconds 10] [--batches 1 10 100]
        [--synchronous-commit on|off] [--sqlite-synchronous NORMAL|FULL]

Single node: ``serve --workers 2`` on SQLite. Cluster: two ``serve --workers 1`` nodes on
one PostgreSQL 16 (the bundled throwaway server of ``make demo-cluster``), the load split
evenly over both as a balancer would. Both get uploads of CMS reports (k = m = 1024; fresh
report ids on every request) over 16 keep-alive connections in total, from wrk when
installed (``make bench`` installs it), else Python threads. Every process shares this
machine's cores: PostgreSQL, both nodes and the load generator. Each figure is checked
against the count the collector reports. Targets (issue 15): the cluster at ≥ 0.8× the
single node with 100 reports per request, ≥ 0.5× with 1. By default each store keeps its
own default durability: PostgreSQL flushes its WAL to disk before an upload is answered,
SQLite (``NORMAL``) does not; ``--sqlite-synchronous FULL`` makes SQLite flush too.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import tempfile
import threading
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np
import requests

from benchmarks.common.table import Row
from benchmarks.serving import http_ingest, loadgen
from benchmarks.serving.bench import upload_templates
from demo.postgres import PostgresServer
from ldp_telemetry.shared import TaskConfig

CONNECTIONS = 16
BENCH_BATCHES = (1, 10)  # reports per request of make bench's rows (issue 41's two lines)


def _task(node: http_ingest.Server, task_id: str) -> TaskConfig:
    return http_ingest.create_task(node, task_id)


def _counted(node: http_ingest.Server, task_id: str) -> int:
    response = requests.post(
        f"{node.url}/v1/tasks/{task_id}/estimates",
        json={"candidates": ["x"]},
        headers={"Authorization": f"Bearer {node.analyst}"},
        timeout=600,
    )
    return int(response.json().get("n", 0))


def load(
    nodes: list[http_ingest.Server], batch: int, seconds: float, folder: Path
) -> dict[str, Any]:
    """Post ``batch``-report uploads to the nodes for ``seconds``; return rates and checks."""
    task_id = f"bench-{batch}-{secrets.token_hex(3)}"
    task = _task(nodes[0], task_id)
    body = upload_templates(task, batch, np.random.default_rng(batch))
    results: list[loadgen.Load] = []

    def one(node: http_ingest.Server, index: int) -> None:
        scratch = folder / f"{task_id}-{index}"
        scratch.mkdir()
        path = f"/v1/tasks/{task_id}/reports"
        results.append(
            loadgen.run(node.url, path, body, CONNECTIONS // len(nodes), seconds, scratch)
        )

    threads = [threading.Thread(target=one, args=(n, i)) for i, n in enumerate(nodes)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    requests_done = sum(r.requests for r in results)
    return {
        "requests_per_s": sum(r.requests_per_s for r in results),
        "reports_per_s": sum(r.requests_per_s for r in results) * batch,
        "non_2xx": sum(r.non_2xx + r.errors for r in results),
        "counted": _counted(nodes[0], task_id),
        "sent": requests_done * batch,
        "tool": results[0].tool,
        "loadavg": os.getloadavg()[0],
    }


def measure(
    batches: list[int],
    seconds: float,
    sqlite_synchronous: str = "NORMAL",
    synchronous_commit: str = "on",
) -> dict[str, Any]:
    """Return each set-up's figure per batch size: the single SQLite node, then the cluster
    (the durability settings go to these servers only)."""
    settings = {
        "LDP_POSTGRES_SYNCHRONOUS_COMMIT": json.dumps(synchronous_commit),
        "LDP_SQLITE_SYNCHRONOUS": json.dumps(sqlite_synchronous),
    }
    rows: dict[str, dict[int, dict[str, Any]]] = {"single": {}, "cluster": {}}
    with tempfile.TemporaryDirectory(prefix="ldp-cluster-bench-") as scratch:
        folder = Path(scratch)
        with http_ingest.running_server(2, settings=settings) as single:
            for batch in batches:
                rows["single"][batch] = load([single], batch, seconds, folder)
        with ExitStack() as stack:
            postgres = PostgresServer()
            stack.callback(postgres.stop)
            database = postgres.new_database()
            tokens = (secrets.token_urlsafe(24), secrets.token_urlsafe(24))
            nodes = [
                stack.enter_context(
                    http_ingest.running_server(
                        1, database=database, tokens=tokens, settings=settings
                    )
                )
                for _ in range(2)
            ]
            for batch in batches:
                rows["cluster"][batch] = load(nodes, batch, seconds, folder)
    return {
        "seconds": seconds,
        "sqlite_synchronous": sqlite_synchronous,
        "synchronous_commit": synchronous_commit,
        "rows": rows,
    }


def _flags(one: dict[str, Any], two: dict[str, Any]) -> list[str]:
    """What a figure's checks found amiss: errors, or fewer counted than acknowledged."""
    return [
        f"{name}: {r['non_2xx']} non-2xx, counted {r['counted']:,} of {r['sent']:,}"
        for name, r in (("single", one), ("cluster", two))
        # wrk counts the requests answered within the time; a few more finish after it
        if r["non_2xx"] or r["counted"] < r["sent"]
    ]


def table_rows(found: dict[str, Any] | None) -> list[Row]:
    """Return ``make bench``'s rows: the cluster against the single node per batch size, with
    issue 41's target (≥ 0.8× at the same durability)."""
    if not found:
        return []
    rows = []
    for batch, one in found["rows"]["single"].items():
        two = found["rows"]["cluster"][batch]
        ratio = two["reports_per_s"] / one["reports_per_s"]
        flags = _flags(one, two)
        rows.append(
            Row(
                f"Two collector nodes (1 worker each) on one PostgreSQL (synchronous_commit "
                f"{found['synchronous_commit']}) vs one SQLite node (2 workers, "
                f"{found['sqlite_synchronous']}), {batch} report(s)/request, 16 connections",
                f"{two['reports_per_s']:,.0f} reports/s (load {two['loadavg']:.1f})"
                + (f"; {'; '.join(flags)}" if flags else "; every ack counted"),
                f"SQLite node: {one['reports_per_s']:,.0f} reports/s (load {one['loadavg']:.1f})",
                f"{ratio:.2f}× of SQLite",
                "≥ 0.8× at the same durability",
                "yes" if ratio >= 0.8 and not flags else "NO",
            )
        )
    return rows


def main() -> None:
    """Run both set-ups one after the other and print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument(
        "--synchronous-commit",
        default="on",
        choices=["on", "off"],
        help="the nodes' POSTGRES_SYNCHRONOUS_COMMIT (docs/operations.md)",
    )
    parser.add_argument(
        "--sqlite-synchronous",
        default="NORMAL",
        choices=["NORMAL", "FULL"],
        help="the single node's SQLITE_SYNCHRONOUS (FULL: a disk flush per commit, as "
        "PostgreSQL's synchronous_commit on)",
    )
    args = parser.parse_args()
    found = measure(args.batches, args.seconds, args.sqlite_synchronous, args.synchronous_commit)
    rows = found["rows"]
    print(
        f"{args.seconds:.0f} s per figure, {CONNECTIONS} connections, "
        f"{rows['single'][args.batches[0]]['tool']}"
    )
    print(
        f"| reports per request | 1 node, SQLite ({args.sqlite_synchronous}), 2 workers "
        f"| 2 nodes × 1 worker, PostgreSQL (synchronous_commit {args.synchronous_commit}) "
        "| ratio |"
    )
    print("|---|---|---|---|")
    for batch in args.batches:
        one, two = rows["single"][batch], rows["cluster"][batch]
        flags = _flags(one, two)
        print(
            f"| {batch} | {one['reports_per_s']:,.0f} reports/s (load {one['loadavg']:.1f}) "
            f"| {two['reports_per_s']:,.0f} reports/s (load {two['loadavg']:.1f}) "
            f"| {two['reports_per_s'] / one['reports_per_s']:.2f}× |"
            + (f" {'; '.join(flags)}" if flags else "")
        )


if __name__ == "__main__":
    main()
