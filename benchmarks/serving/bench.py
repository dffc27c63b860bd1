"""Uploads of 1, 10 and 500 reports per request beside the no-op app, and slow clients.

For each server model (ldp_telemetry.aggregator.serving), in one run: the no-op Flask app
(benchmarks/serving/noop_app.py) and the collector (CMS k=m=1024, fresh report ids on every
request) are served with the same command line and 2 workers, and loaded over 16 keep-alive
connections (wrk, or Python threads when wrk is missing). Then the slow-client row: while
200 connections dribble one header byte per second and 200 more sit idle
(benchmarks/serving/slow_clients.py, its own process), 4 clients upload 1 report per request, each
on a new connection; its p99 latency, non-2xx answers and errors are reported.
The collector's acknowledged reports are checked against its /metrics counter.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import requests

from benchmarks.common.workload import zipf_values
from benchmarks.serving import http_ingest, loadgen
from ldp_telemetry.aggregator import serving
from ldp_telemetry.shared import CountMeanSketch, TaskConfig, encode_batch
from ldp_telemetry.shared.codec import Envelope, new_report_id

BATCHES = (1, 10, 500)
CONNECTIONS = 16
WORKERS = 2
TASK_K = TASK_M = 1024
SLOW_DRIBBLE, SLOW_IDLE, SLOW_CLIENTS = 200, 200, 4
POOL_REPORTS, POOL_BODIES = 100_000, 4_000  # distinct privatized reports / bodies per size
# Uploads beside an analyst: a large sketch holding ANALYST_REPORTS reports, one analyst
# asking estimates of ANALYST_CANDIDATES candidates in a loop, DEVICES threads sending
# 1-report uploads every DEVICE_PAUSE s (a steady pace, not a saturating load).
ANALYST_K, ANALYST_M, ANALYST_REPORTS, ANALYST_CANDIDATES = 65_536, 1_024, 100_000, 10_000
DEVICES, DEVICE_PAUSE = 4, 0.01
ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def running_noop(server: str) -> Iterator[http_ingest.Server]:
    """Serve benchmarks/serving/noop_app.py with ``server``'s command line on a free port."""
    with tempfile.TemporaryDirectory(prefix="ldp-noop-") as folder:
        port = http_ingest._free_port()
        command = serving.command(
            server, "benchmarks.serving.noop_app:app", "127.0.0.1", port, WORKERS
        )
        with open(Path(folder) / "server.log", "wb") as log:
            process = subprocess.Popen(
                command,
                cwd=ROOT,
                stdout=log,
                stderr=log,
                start_new_session=True,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )
        running = http_ingest.Server(f"http://127.0.0.1:{port}", process, "", "")
        try:
            http_ingest._wait_ready(running, WORKERS, Path(folder) / "server.log")
            yield running
        finally:
            http_ingest._stop(process)


def upload_templates(
    task: TaskConfig, batch: int, rng: np.random.Generator, pool: int = POOL_REPORTS
) -> list[bytes]:
    """Return body templates of uploads of ``batch`` reports (loadgen.template), every
    report privatized by the SDK's mechanism from its own Zipf-drawn value, as devices do.

    ``pool`` reports in all (at most ``POOL_BODIES`` bodies): the load generator
    cycles through them, filling fresh ids into every request.
    """
    mechanism = task.mechanism_object
    if not isinstance(mechanism, CountMeanSketch):
        raise TypeError(f"expected a CMS task, got {task.mechanism}")
    bodies = max(1, min(POOL_BODIES, pool // batch))
    reports = mechanism.privatize_many(zipf_values(bodies * batch, rng), rng)
    now = task.floor_time(time.time())
    templates = []
    for first in range(0, bodies * batch, batch):
        envelopes = [
            Envelope(new_report_id(), task.fingerprint, now, reports.report(i))
            for i in range(first, first + batch)
        ]
        templates.append(loadgen.template(encode_batch(task, envelopes)))
    return templates


def accepted(url: str, task_id: str) -> int:
    """Return the collector's count of accepted reports of a task (all workers)."""
    text = requests.get(f"{url}/metrics", timeout=30).text
    match = re.search(
        rf'ldp_reports_accepted_total{{task_id="{re.escape(task_id)}"}} '
        r"([\d.e+]+)",
        text,
    )
    return int(float(match.group(1))) if match else 0


def measure(
    servers: tuple[str, ...],
    seconds: float,
    slow_seconds: float,
    rng: np.random.Generator,
    pool: int = POOL_REPORTS,
    analyst: tuple[int, int] = (ANALYST_REPORTS, ANALYST_CANDIDATES),
) -> dict[str, Any]:
    """Return, per server model, the no-op and collector loads and the slow-client run.

    ``pool``: privatized reports per batch size (upload_templates); ``analyst``: reports
    in the analyst's sketch and candidates per estimate (beside_analyst). Smaller than
    the defaults only to keep the script working (``--smoke``).
    """
    results: dict[str, Any] = {"tool": "wrk" if loadgen.have_wrk() else "python"}
    with tempfile.TemporaryDirectory(prefix="ldp-serving-") as scratch:
        folder = Path(scratch)
        for server in servers:
            found: dict[str, Any] = {"noop": {}, "collector": {}}
            with http_ingest.running_server(WORKERS, server) as collector:
                templates = {}
                for batch in BATCHES:
                    task_id = f"bench-{batch}"
                    task = _cms_task(collector, task_id)
                    templates[batch] = (task_id, upload_templates(task, batch, rng, pool))
                    path = f"/v1/tasks/{task_id}/reports"
                    load = loadgen.run(
                        collector.url, path, templates[batch][1], CONNECTIONS, seconds, folder
                    )
                    found["collector"][str(batch)] = {
                        **dataclasses.asdict(load),
                        "loadavg": os.getloadavg()[0],
                        "accepted": accepted(collector.url, task_id),
                        "expected": load.requests * batch,
                    }
                found["slow"] = _slow(collector, templates[1], slow_seconds)
                if server == serving.DEFAULT_SERVER:
                    found["analyst"] = beside_analyst(collector, slow_seconds, rng, pool, *analyst)
            with running_noop(server) as noop:
                for batch in BATCHES:
                    load = loadgen.run(
                        noop.url,
                        "/v1/tasks/noop/reports",
                        templates[batch][1],
                        CONNECTIONS,
                        seconds,
                        folder,
                    )
                    found["noop"][str(batch)] = {
                        **dataclasses.asdict(load),
                        "loadavg": os.getloadavg()[0],
                    }
            results[server] = found
    return results


def describe(results: dict[str, Any], seconds: float) -> str:
    """Return the table's note on how the serving rows were measured."""
    tool = (
        "wrk (2 threads)"
        if results.get("tool") == "wrk"
        else "a Python load generator (wrk not found: 16 threads in one process, itself the "
        "bottleneck, so these rates are lower bounds)"
    )
    return (
        f"serving: {WORKERS} workers per server, {CONNECTIONS} keep-alive connections "
        f"from {tool}, {seconds:.0f} s per figure, CMS k={TASK_K} m={TASK_M}, fresh "
        "report ids on every request; the no-op app (benchmarks/serving/noop_app.py) under the "
        "same command line in the same run; (load n) = 1-minute load average after the "
        f"figure. Slow clients: {SLOW_DRIBBLE} connections dribbling one header byte a "
        f"second + {SLOW_IDLE} idle (reopened when closed), {SLOW_CLIENTS} clients "
        "uploading 1 report per request, each on a new connection, 10 s client timeout"
    )


def _cms_task(
    server: http_ingest.Server, task_id: str, k: int = TASK_K, m: int = TASK_M
) -> TaskConfig:
    response = requests.post(
        f"{server.url}/v1/tasks",
        timeout=30,
        headers={"Authorization": f"Bearer {server.admin}"},
        json={"task_id": task_id, "mechanism": "cms", "epsilon": 4.0, "k": k, "m": m},
    )
    if response.status_code != 201:
        raise RuntimeError(f"creating the task failed: {response.status_code} {response.text}")
    body = response.json()
    body.pop("upload_key", None)
    return TaskConfig.from_dict(body)


def _slow(
    server: http_ingest.Server, upload: tuple[str, list[bytes]], seconds: float
) -> dict[str, Any]:
    """Normal uploads on fresh connections while the attack process holds its connections."""
    port = server.url.rsplit(":", 1)[1]
    attacker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "benchmarks.serving.slow_clients",
            "--port",
            port,
            "--dribble",
            str(SLOW_DRIBBLE),
            "--idle",
            str(SLOW_IDLE),
            "--seconds",
            str(seconds + 4),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        time.sleep(3)  # let every attacking connection open and start dribbling
        load = loadgen.python_load(
            server.url,
            f"/v1/tasks/{upload[0]}/reports",
            upload[1],
            SLOW_CLIENTS,
            seconds,
            fresh_connections=True,
        )
        out, _ = attacker.communicate(timeout=seconds + 60)
    finally:
        if attacker.poll() is None:
            attacker.kill()
            attacker.wait(timeout=30)
    return {**dataclasses.asdict(load), "loadavg": os.getloadavg()[0], "attack": out.strip()}


def beside_analyst(
    server: http_ingest.Server,
    seconds: float,
    rng: np.random.Generator,
    pool: int = POOL_REPORTS,
    reports: int = ANALYST_REPORTS,
    candidate_count: int = ANALYST_CANDIDATES,
) -> dict[str, Any]:
    """Return device uploads' latencies alone, then beside an analyst looping estimates."""
    task = _cms_task(server, "analyst-big", ANALYST_K, ANALYST_M)
    filled = []  # the fill's latencies: its fold (13 uploads in) stalls the node as well
    for template in upload_templates(task, 5000, rng, reports)[: reports // 5000]:
        body = template.replace(loadgen.SLOT.encode(), loadgen._prefix())
        started = time.perf_counter()
        _post(server, task.task_id, body).raise_for_status()
        filled.append(time.perf_counter() - started)
    devices = upload_templates(task, 1, rng, pool)
    alone = _devices(server, task.task_id, devices, seconds)
    stop, spans = threading.Event(), []
    candidates = {"candidates": [f"item-{i}" for i in range(candidate_count)]}

    def analyst() -> None:
        while not stop.is_set():
            started = time.perf_counter()
            requests.post(
                f"{server.url}/v1/tasks/{task.task_id}/estimates",
                json=candidates,
                headers={"Authorization": f"Bearer {server.analyst}"},
                timeout=600,
            ).raise_for_status()
            spans.append(time.perf_counter() - started)

    thread = threading.Thread(target=analyst, daemon=True)
    thread.start()
    time.sleep(0.5)  # the first estimate is under way
    beside = _devices(server, task.task_id, devices, seconds)
    stop.set()
    thread.join(timeout=600)
    return {
        "alone": alone,
        "beside": beside,
        "estimates_s": spans,
        "fill_max_ms": max(filled, default=float("nan")) * 1e3,
        "loadavg": os.getloadavg()[0],
        "reports": reports // 5000 * 5000,
        "candidates": candidate_count,
    }


def _post(server: http_ingest.Server, task_id: str, body: bytes) -> requests.Response:
    return requests.post(
        f"{server.url}/v1/tasks/{task_id}/reports",
        data=body,
        headers={"Content-Type": "application/json"},
        timeout=60,
    )


def _devices(
    server: http_ingest.Server, task_id: str, templates: list[bytes], seconds: float
) -> dict[str, Any]:
    """Return p50/p99/max (ms) of 1-report uploads sent by DEVICES paced threads."""
    latencies: list[float] = []
    failed = [0]
    deadline = time.monotonic() + seconds

    def device(first: int) -> None:
        session, turn = requests.Session(), first
        while time.monotonic() < deadline:
            turn += 1
            body = templates[turn % len(templates)].replace(
                loadgen.SLOT.encode(), loadgen._prefix()
            )
            started = time.perf_counter()
            try:
                ok = session.post(
                    f"{server.url}/v1/tasks/{task_id}/reports",
                    data=body,
                    headers={"Content-Type": "application/json"},
                    timeout=60,
                ).ok
            except requests.RequestException:
                ok = False
            latencies.append(time.perf_counter() - started)
            failed[0] += not ok
            time.sleep(DEVICE_PAUSE)

    threads = [threading.Thread(target=device, args=(i * 997,)) for i in range(DEVICES)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ordered = sorted(latencies)
    return {
        "uploads": len(ordered),
        "failed": failed[0],
        "p50_ms": loadgen._percentile(ordered, 0.5) * 1e3,
        "p99_ms": loadgen._percentile(ordered, 0.99) * 1e3,
        "max_ms": (ordered[-1] if ordered else float("nan")) * 1e3,
        "over_1s": sum(latency > 1 for latency in ordered),
    }


def main() -> None:
    """Measure alone: ``python -m benchmarks.serving.bench --servers granian gthread``, or
    only the uploads beside an analyst: ``... --only analyst --slow-seconds 15``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.serving.bench")
    parser.add_argument(
        "--servers", nargs="+", default=list(serving.SERVERS), choices=serving.SERVERS
    )
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--slow-seconds", type=float, default=15.0)
    parser.add_argument(
        "--only",
        choices=["analyst"],
        help="run only beside_analyst (its phases last --slow-seconds), on the default server",
    )
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    if args.only == "analyst":
        with http_ingest.running_server(WORKERS) as collector:
            found = beside_analyst(collector, args.slow_seconds, rng)
    else:
        found = measure(tuple(args.servers), args.seconds, args.slow_seconds, rng)
    print(json.dumps(found, indent=1))


if __name__ == "__main__":
    main()
