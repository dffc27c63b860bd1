"""HTTP ingest rate and peak server memory through the real aggregator.

Starts ``ldp-aggregator serve`` (default server, SQLite in WAL mode: a 200 is sent
only after its transaction commits) on a free loopback port with a temporary database,
creates a CMS task (k=2048, m=1024) and posts pre-encoded batches of 500 reports from a few
client threads; beside it, the same task with 2 public dimensions (3 platforms × 4 versions,
20 slices with other), its reports spread over the slices, in runs alternating with a
copy of the first on a second server (issue 38: ≥ 0.9× the rate without). It folds every
``INGEST_STAGED_BYTES`` (512 KiB, both tasks) rather than the default 8 MiB, so that both
tasks fold several times in runs this short (the task without dimensions every 512 KiB, about
3,900 reports; the one with dimensions every 10 MiB, 512 KiB per slice it stages in: 3 times
in its 300,000 reports, about 39 MiB, whose last 9 MiB stay staged): their rates include the
folds a long run pays, each slice's as amortised as the other task's; the headline rate
without dimensions is measured apart on a server at the default STAGED_BYTES. The
load generator shares the machine's cores with the server, as it would in any single-machine
measurement. Memory is the peak resident set (VmHWM) of the server master and its workers,
read from /proc at checkpoints while 10^6 reports go in.
"""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import requests

from benchmarks.common.settings import EPSILON, HTTP_BATCH, MODES, SKETCH_M, Sizes
from benchmarks.common.workload import zipf_values
from ldp_telemetry.aggregator.serving import DEFAULT_SERVER
from ldp_telemetry.shared import CountMeanSketch, TaskConfig, encode_batch
from ldp_telemetry.shared.codec import Envelope, new_report_id

READY_WAIT = 60.0  # seconds for the server and its workers to come up
REQUEST_TIMEOUT = 120.0
CLIENT_THREADS = 4
TASK_K = 2048
CHUNK = 50_000  # reports encoded at once while filling the memory benchmark
HTTP_RUNS = 3  # ingest runs per worker count; the median is reported
INGEST_STAGED_BYTES = 1 << 19  # the ingest server's STAGED_BYTES: both tasks fold in the runs
DIMENSIONS = [
    {"name": "platform", "values": ["android", "ios", "web"]},
    {"name": "app_version", "values": ["5.1", "5.2", "5.3", "5.4"]},
]


@dataclass(frozen=True)
class Server:
    """A running collector: its URL, server master process and tokens."""

    url: str
    process: subprocess.Popen[bytes]
    admin: str
    analyst: str
    db: Path | None = None  # the collector's database file


@contextmanager
def running_server(
    workers: int,
    server: str = DEFAULT_SERVER,
    database: str | None = None,
    tokens: tuple[str, str] | None = None,
    staged_bytes: int | None = None,
    settings: dict[str, str] | None = None,
) -> Iterator[Server]:
    """Run a collector on a temporary database (``staged_bytes``: its STAGED_BYTES, None for
    the default; ``settings``: more of its environment); stop its process group on exit."""
    with tempfile.TemporaryDirectory(prefix="ldp-bench-") as folder:
        admin, analyst = tokens or (secrets.token_urlsafe(24), secrets.token_urlsafe(24))
        port = _free_port()
        env = {
            **os.environ,
            "LDP_ADMIN_TOKEN": admin,
            "LDP_ANALYST_TOKEN": analyst,
            "PROMETHEUS_MULTIPROC_DIR": _made(Path(folder) / "metrics"),
            **({} if staged_bytes is None else {"LDP_STAGED_BYTES": str(staged_bytes)}),
            **(settings or {}),
        }
        command = [
            sys.executable,
            "-m",
            "ldp_telemetry.aggregator.cli",
            "--db",
            database or str(Path(folder) / "bench.sqlite3"),
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            str(workers),
            "--server",
            server,
        ]
        with open(Path(folder) / "server.log", "wb") as log:
            process = subprocess.Popen(
                command, env=env, stdout=log, stderr=log, start_new_session=True
            )
        running = Server(
            f"http://127.0.0.1:{port}",
            process,
            admin,
            analyst,
            None if database else Path(folder) / "bench.sqlite3",
        )
        try:
            _wait_ready(running, workers, Path(folder) / "server.log")
            yield running
        finally:
            _stop(process)


def create_task(server: Server, task_id: str, **more: Any) -> TaskConfig:
    """Create a CMS task over HTTP (``more``: other fields, e.g. dimensions) and return its
    configuration."""
    response = requests.post(
        f"{server.url}/v1/tasks",
        timeout=REQUEST_TIMEOUT,
        headers={"Authorization": f"Bearer {server.admin}"},
        json={
            "task_id": task_id,
            "mechanism": "cms",
            "epsilon": EPSILON,
            "k": TASK_K,
            "m": SKETCH_M,
            **more,
        },
    )
    if response.status_code != 201:
        raise RuntimeError(f"creating the task failed: {response.status_code} {response.text}")
    body = response.json()
    body.pop("upload_key", None)
    return TaskConfig.from_dict(body)


def report_bodies(task: TaskConfig, count: int, rng: np.random.Generator) -> list[bytes]:
    """Return upload bodies of ``count`` fresh reports in batches of HTTP_BATCH (a task with
    dimensions: each report in a slice drawn uniformly)."""
    mechanism = task.mechanism_object
    if not isinstance(mechanism, CountMeanSketch):
        raise TypeError(f"expected a CMS task, got {task.mechanism}")
    batch = mechanism.privatize_many(zipf_values(count, rng), rng)
    now = task.floor_time(time.time())
    slices = rng.integers(task.slice_count, size=count)
    envelopes = [
        Envelope(new_report_id(), task.fingerprint, now, batch.report(i), int(slices[i]))
        for i in range(count)
    ]
    return [encode_batch(task, envelopes[i : i + HTTP_BATCH]) for i in range(0, count, HTTP_BATCH)]


def post_all(server: Server, task_id: str, bodies: list[bytes]) -> int:
    """Post every body from CLIENT_THREADS threads; return the reports accepted."""
    url = f"{server.url}/v1/tasks/{task_id}/reports"
    headers = {"Content-Type": "application/json"}

    def post(body: bytes) -> int:
        response = requests.post(url, data=body, headers=headers, timeout=REQUEST_TIMEOUT)
        if response.status_code != 200:
            raise RuntimeError(f"upload failed: {response.status_code} {response.text[:200]}")
        return int(response.json()["accepted"])

    with ThreadPoolExecutor(CLIENT_THREADS) as pool:
        return sum(pool.map(post, bodies))


def ingest_rates(
    sizes: Sizes, rng: np.random.Generator, staged_bytes: int = INGEST_STAGED_BYTES
) -> dict[str, dict[str, Any]]:
    """Return the median reports/s of durable HTTP ingest (repeated runs) per worker count.

    ``http_ingest_w<N>``: the task without dimensions on a server at the default
    STAGED_BYTES (the headline rate). ``http_ingest_folding_w<N>`` and ``http_ingest_dims_w<N>``:
    the same task and the one with 2 dimensions on a second server folding every
    ``staged_bytes`` (per slice staged in), their runs alternating: issue 38's pair, both
    paying the folds a long run pays.
    """
    results = {}
    for workers in sizes.http_workers:
        rates: dict[str, list[float]] = {"": [], "folding_": [], "dims_": []}
        with running_server(workers) as server:
            task = create_task(server, "bench-ingest")
            for _ in range(HTTP_RUNS):
                rates[""].append(_rate(server, task, sizes.http_reports, rng))
        with running_server(workers, staged_bytes=staged_bytes) as server:
            tasks = {
                "folding_": create_task(server, "bench-ingest"),
                "dims_": create_task(server, "bench-ingest-dims", dimensions=DIMENSIONS),
            }
            for _ in range(HTTP_RUNS):
                for kind, task in tasks.items():
                    rates[kind].append(_rate(server, task, sizes.http_reports, rng))
        for kind, measured in rates.items():
            results[f"http_ingest_{kind}w{workers}"] = {
                "rate": statistics.median(measured),
                "rates": measured,
                "reports": sizes.http_reports,
            }
    return results


def _rate(server: Server, task: TaskConfig, reports: int, rng: np.random.Generator) -> float:
    """Return the reports/s of one ingest run of fresh reports."""
    bodies = report_bodies(task, reports, rng)  # fresh report ids
    started = time.perf_counter()
    accepted = post_all(server, task.task_id, bodies)
    rate = accepted / (time.perf_counter() - started)
    if accepted != reports:
        raise RuntimeError(f"{accepted} of {reports} reports accepted")
    return rate


def main(argv: list[str] | None = None) -> None:
    """Print the ingest rows alone: ``python -m benchmarks.serving.http_ingest [--reports N]
    [--workers 1,2] [--staged-bytes B]`` (the ``make bench`` rows at their full sizes)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.serving.http_ingest")
    parser.add_argument("--reports", type=int, default=MODES["full"].http_reports)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--staged-bytes", type=int, default=INGEST_STAGED_BYTES)
    parser.add_argument("--seed", type=int, default=2)
    args = parser.parse_args(argv)
    workers = tuple(int(w) for w in args.workers.split(","))
    sizes = replace(MODES["full"], http_reports=args.reports, http_workers=workers)
    rates = ingest_rates(sizes, np.random.default_rng(args.seed), args.staged_bytes)
    for count in workers:
        plain, dims = rates[f"http_ingest_folding_w{count}"], rates[f"http_ingest_dims_w{count}"]
        print(
            f"{count} worker(s), default STAGED_BYTES: "
            f"{rates[f'http_ingest_w{count}']['rate']:,.0f}/s; folding every {args.staged_bytes:,}"
            f" bytes: without dimensions {plain['rate']:,.0f}/s "
            f"(runs {', '.join(f'{r:,.0f}' for r in plain['rates'])}); with 2 (20 slices) "
            f"{dims['rate']:,.0f}/s (runs {', '.join(f'{r:,.0f}' for r in dims['rates'])}): "
            f"{dims['rate'] / plain['rate']:.2f}×",
            flush=True,
        )


def peak_memory(sizes: Sizes, rng: np.random.Generator) -> dict[str, dict[str, Any]]:
    """Return the server's peak RSS (MiB, master + workers) at each ingest checkpoint."""
    checkpoints: dict[int, float] = {}
    with running_server(1) as server:
        task = create_task(server, "bench-memory")
        ingested = 0
        for target in sizes.memory_checkpoints:
            while ingested < target:
                count = min(CHUNK, target - ingested)
                ingested += post_all(server, task.task_id, report_bodies(task, count, rng))
            checkpoints[ingested] = _peak_rss_mib(server.process.pid)
    return {"server_memory": {"peak_mib": checkpoints}}


def _peak_rss_mib(master: int) -> float:
    """Return the summed VmHWM of the server master and its worker processes in MiB."""
    total_kib = 0
    for pid in [master, *_children(master)]:
        try:
            status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
        except OSError:
            continue  # the worker exited between the listing and the read
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                total_kib += int(line.split()[1])
    return total_kib / 1024


def _children(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text(encoding="utf-8")
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
                found.append(int(entry.name))
    return found


def _wait_ready(server: Server, workers: int, log: Path) -> None:
    """Poll /readyz (bounded) until the server answers and its workers have started."""
    deadline = time.monotonic() + READY_WAIT
    while time.monotonic() < deadline and server.process.poll() is None:
        try:
            ready = requests.get(f"{server.url}/readyz", timeout=2).status_code == 200
        except (requests.ConnectionError, requests.Timeout):  # not listening, or starting
            ready = False
        if ready and len(_children(server.process.pid)) >= workers:
            return
        time.sleep(0.2)
    raise RuntimeError(
        f"the aggregator did not become ready; see its log: "
        f"{log.read_text(encoding='utf-8', errors='replace')[-500:]}"
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the server's process group: SIGTERM, then SIGKILL after a bounded wait."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _made(path: Path) -> str:
    path.mkdir()
    return str(path)


if __name__ == "__main__":
    main()
