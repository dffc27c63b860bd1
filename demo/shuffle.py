"""Devices → shuffler → collector on this machine: estimates with local and central ε.

Starts the collector (``ldp-aggregator serve``) and a shuffler in front of it
(``ldp-aggregator shuffler``, with a shuffler token made by ``tokens create --role
shuffler``), creates a ``cms`` task (favourite emoji) and an ``rr`` task (dark mode), and
has every simulated device upload its two reports to the shuffler over HTTP with the real
SDK (one upload per device and task, as on phones). The shuffler forwards batches drawn
from at least ``--batch-min`` uploads; the estimates then carry the central ε of their
smallest batch beside each report's local ε. Reports still waiting for enough other
uploads at the end stay in the shuffler's spool, as they would in production.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests

from demo.__main__ import DARK_MODE_TASK, EMOJI_TASK
from demo.population import VOCABULARY, Population, make_population
from demo.server import Collector, free_port, running_collector
from ldp_telemetry.client import Client, Timeouts
from ldp_telemetry.shared import TaskConfig

WAIT = 60.0  # seconds for the shuffler to start, and to forward what is ready
STILL = 2.0  # seconds the counters hold still before the shuffler counts as settled


def start_shuffler(collector: Collector, db: Path, folder: Path, batch_min: int) -> Any:
    """Start a shuffler in front of ``collector``; return (its URL, process)."""
    create = ["tokens", "create", "--role", "shuffler"]
    token = subprocess.run(
        [sys.executable, "-m", "ldp_telemetry.aggregator.cli", "--db", str(db), *create],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "ldp_telemetry.aggregator.cli",
        "shuffler",
        "--upstream",
        collector.url,
    ]
    command += ["--spool", str(folder / "spool.sqlite3"), "--batch-min", str(batch_min)]
    command += ["--port", str(port)]
    env = {**os.environ, "LDP_SHUFFLER_TOKEN": token, "PROMETHEUS_MULTIPROC_DIR": ""}
    with open(folder / "shuffler.log", "wb") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=log, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if requests.get(url + "/healthz", timeout=2).status_code == 200:
                return url, process
        except requests.ConnectionError:
            time.sleep(0.1)
    raise RuntimeError(f"the shuffler did not start: {(folder / 'shuffler.log').read_text()}")


def record(shuffler_url: str, population: Population, tasks: list[TaskConfig]) -> int:
    """Have every device record its two values through the shuffler; return reports sent."""
    patient = Timeouts(connect=10, read=60, config=30)

    def device(values: tuple[str, bool]) -> int:
        sdk = Client(shuffler_url, tasks=tasks, timeouts=patient, atexit_timeout=None)
        sdk.record(EMOJI_TASK["task_id"], values[0])
        sdk.record(DARK_MODE_TASK["task_id"], values[1])
        sdk.close(60)
        return int(sdk.stats().sent)

    with ThreadPoolExecutor(max_workers=8) as pool:
        return sum(pool.map(device, zip(population.emoji, population.dark_mode, strict=True)))


def settle(shuffler_url: str, sent: int, batch_min: int) -> dict[str, int]:
    """Wait until every report is forwarded or waits for more uploads; return counters.

    The counters must also hold still for ``STILL`` seconds (several of the forwarder's
    passes): a group that just reached ``batch_min`` uploads is counted as waiting until a
    pass claims it, so "forwarded + waiting = sent" alone returned once with a whole batch
    about to go (700 forwarded and 100 waiting, then 800 counted).
    """
    deadline = time.monotonic() + WAIT
    last, since = None, time.monotonic()
    while True:
        counters = requests.get(shuffler_url + "/healthz", timeout=10).json()
        forwarded, waiting = counters.get("reports", 0), counters["waiting"]
        if (forwarded, waiting) != last:
            last, since = (forwarded, waiting), time.monotonic()
        still = time.monotonic() - since >= STILL
        done = forwarded + waiting == sent and waiting < 2 * batch_min and still
        if done or time.monotonic() > deadline:
            return {"forwarded": forwarded, "waiting": waiting}
        time.sleep(0.2)


def run(devices: int, batch_min: int, seed: int) -> tuple[dict[str, Any], dict[str, Any], int]:
    """Run the whole pipeline; return the two estimates and the reports still waiting."""
    population = make_population(devices, seed=seed)
    with tempfile.TemporaryDirectory(prefix="ldp-shuffle-demo-") as name:
        folder = Path(name)
        with running_collector(folder) as collector:
            for task in (EMOJI_TASK, DARK_MODE_TASK):
                collector.post("/v1/tasks", task, collector.admin_token)
            url, process = start_shuffler(collector, folder / "ldp.sqlite3", folder, batch_min)
            try:
                print(f"collector {collector.url}, shuffler {url} (batches of ≥ {batch_min})")
                tasks = [
                    TaskConfig.from_dict(requests.get(f"{url}/v1/tasks/{t['task_id']}").json())
                    for t in (EMOJI_TASK, DARK_MODE_TASK)
                ]
                sent = record(url, population, tasks)
                counters = settle(url, sent, batch_min)
                print(f"devices sent {sent} reports: {counters}")
            finally:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(timeout=30)
            emoji = collector.post(
                f"/v1/tasks/{EMOJI_TASK['task_id']}/estimates",
                {"candidates": list(VOCABULARY[:5])},
                collector.analyst_token,
            )
            dark = collector.post(
                f"/v1/tasks/{DARK_MODE_TASK['task_id']}/estimates", {}, collector.analyst_token
            )
    return emoji, dark, counters["waiting"]


def show(name: str, answer: dict[str, Any]) -> None:
    """Print an estimate's n, both epsilons and its first rows."""
    central = answer["central_epsilon"]
    stated = (
        f"central ε {central:.4f} at δ = {answer['delta']:g} (smallest batch "
        f"{answer['smallest_batch']})"
        if central is not None
        else f"no central ε: {answer['central_epsilon_reason']}"
    )
    print(f"\n{name}: n = {answer['n']}, local ε {answer['effective_epsilon']:.4f}; {stated}")
    if "lifetime" in answer:
        lifetime = answer["lifetime"]
        print(
            f"  a device in one batch a day for {lifetime['batches']} day(s): central ε "
            f"{lifetime['epsilon']:.4f} at δ = {lifetime['delta']:g} (summed: "
            f"{lifetime['naive_epsilon']:.4f})"
        )
    for row in answer["estimates"][:5]:
        print(
            f"  {json.dumps(row['value'], ensure_ascii=False):<8} {row['estimate']:>9.0f}"
            f"  [{row['ci_low']:.0f}, {row['ci_high']:.0f}]"
        )


def main(argv: list[str] | None = None) -> int:
    """Run the demo; 0 if the estimates carry a central ε."""
    parser = argparse.ArgumentParser(prog="python -m demo.shuffle", description=__doc__)
    parser.add_argument("--devices", type=int, default=3000)
    parser.add_argument("--batch-min", type=int, default=500)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args(argv)
    emoji, dark, waiting = run(args.devices, args.batch_min, args.seed)
    show("favourite emoji (cms)", emoji)
    show("dark mode (rr)", dark)
    print(f"\n{waiting} reports wait in the shuffler's spool for more uploads.")
    return 0 if emoji["central_epsilon"] is not None and dark["central_epsilon"] else 1


if __name__ == "__main__":
    sys.exit(main())
