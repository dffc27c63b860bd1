"""Two collector nodes on one PostgreSQL database, as behind a load balancer (make demo-cluster).

Starts a throwaway PostgreSQL (:mod:`demo.postgres`), two ``ldp-aggregator serve`` nodes on
the same database with the same tokens, creates a ``cms`` task on one node, and uploads a
population's privatized reports in small batches spread over both nodes, as devices behind
a round-robin balancer would. To show what the shared store guarantees, every tenth batch
is also sent to the other node (a retry that reached another node), and one node is
killed with SIGKILL halfway: the batches it can no longer take are resent to the survivor.
At the end both nodes' estimates agree and count every device exactly once.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

import requests

from demo.population import VOCABULARY, make_population
from demo.postgres import PostgresServer
from demo.server import Collector, new_tokens, running_collector
from ldp_telemetry.shared import Envelope, TaskConfig, encode_batch, new_report_id

TASK = {"task_id": "favourite-emoji", "mechanism": "cms", "epsilon": 4.0, "k": 1024, "m": 1024}
BATCH = 50  # reports per upload: a handful per device, as devices send them


def upload(node: Collector, task_id: str, body: bytes) -> int | None:
    """POST one batch; return how many reports were new, or None if the node is gone."""
    try:
        response = requests.post(
            f"{node.url}/v1/tasks/{task_id}/reports",
            data=body,
            headers={"Content-Type": "application/json"},
            timeout=30,
        )
    except requests.ConnectionError:
        return None
    response.raise_for_status()
    return int(response.json()["accepted"])


def run_cluster(devices: int, seed: int, folder: Path) -> int:
    """Run the demo; return 0 if both nodes count every device exactly once."""
    population = make_population(devices, seed=seed)
    with ExitStack() as stack:
        started = time.monotonic()
        postgres = PostgresServer()
        stack.callback(postgres.stop)
        database = postgres.new_database()
        print(
            f"PostgreSQL 16 (bundled, Unix socket only) ready in {time.monotonic() - started:.1f} s"
        )
        tokens = new_tokens()
        nodes = [
            stack.enter_context(running_collector(folder, database, name=name, tokens=tokens))
            for name in ("node-a", "node-b")
        ]
        print(f"two collector nodes on one database: {nodes[0].url}, {nodes[1].url}")

        created = nodes[0].post("/v1/tasks", TASK, tokens[0])
        task = TaskConfig.from_dict({k: v for k, v in created.items() if k != "upload_key"})
        seen_by_b = requests.get(f"{nodes[1].url}/v1/tasks/{task.task_id}", timeout=10)
        print(f"task created on node-a, served by node-b too: {seen_by_b.status_code == 200}")

        # What the devices do on their side: privatize, then wrap with a fresh report id.
        batch = task.mechanism_object.privatize_many(population.emoji)
        bucket = task.floor_time(time.time())
        reports = [
            Envelope(new_report_id(), task.fingerprint, bucket, batch.report(i))
            for i in range(devices)
        ]
        bodies = [encode_batch(task, reports[i : i + BATCH]) for i in range(0, devices, BATCH)]

        accepted, retried, rerouted, killed = Counter[str](), 0, 0, False
        for i, body in enumerate(bodies):
            if not killed and i == len(bodies) // 2:
                os.killpg(nodes[1].pid, signal.SIGKILL)  # a node dies mid-load
                killed = True
                print(f"node-b killed (SIGKILL) after {i} of {len(bodies)} uploads")
            target = nodes[i % 2]
            new = upload(target, task.task_id, body)
            if new is None:  # the balancer sends it to the node still alive
                target, rerouted = nodes[0], rerouted + 1
                new = upload(target, task.task_id, body)
            accepted["node-a" if target is nodes[0] else "node-b"] += new or 0
            if i % 10 == 0:  # a retry that reached the other node: nothing new
                again = upload(nodes[0] if target is nodes[1] else nodes[1], task.task_id, body)
                retried += again is not None
                assert not again, "a replayed batch was counted twice"

        answer = nodes[0].post(
            f"/v1/tasks/{task.task_id}/estimates", {"candidates": list(VOCABULARY)}, tokens[1]
        )
        print(
            f"\nuploads: {len(bodies)} batches of {BATCH}; accepted by node-a "
            f"{accepted['node-a']:,}, by node-b {accepted['node-b']:,}; {retried} batches "
            f"sent twice (0 reports counted twice); {rerouted} rerouted after the kill"
        )
        print(f"reports counted: {answer['n']:,} of {devices:,} devices")
        truth = Counter(population.emoji)
        print(f"\n{'emoji':<8}{'true':>8}{'estimate':>10}   95% interval")
        for row in sorted(answer["estimates"], key=lambda row: -row["estimate"])[:5]:
            print(
                f"{row['value']:<8}{truth[row['value']]:>8,}{row['estimate']:>10,.0f}"
                f"   [{row['ci_low']:,.0f}, {row['ci_high']:,.0f}]"
            )
        exact = answer["n"] == devices
        print("\nevery device counted exactly once" if exact else "\nMISMATCH: see the logs")
        return 0 if exact else 1


def main(argv: list[str] | None = None) -> int:
    """Run the cluster demo from the command line."""
    parser = argparse.ArgumentParser(prog="python -m demo.cluster", description=__doc__)
    parser.add_argument("--devices", type=int, default=20_000, help="simulated devices")
    parser.add_argument("--seed", type=int, default=7, help="population seed")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ldp-cluster-") as folder:
        return run_cluster(args.devices, args.seed, Path(folder))


if __name__ == "__main__":
    sys.exit(main())
