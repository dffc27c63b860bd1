"""Where a served upload's CPU goes: py-spy samples of the collector's workers under wrk.

    python -m benchmarks.serving.cpu_profile [--batches 1 10] [--seconds 10]

The collector runs as ``benchmarks.serving.bench`` runs it (default server, 2 workers, SQLite, CMS
k = m = 1024) and is loaded the same way (realistic bodies: every report drawn from the
SDK's privatizer, fresh ids per request). While wrk runs, ``py-spy record --nonblocking``
samples each worker's Python threads (idle threads are not sampled) and the workers' CPU
time is read from /proc. Each sample is put in the stage its deepest known frame belongs to
(``STAGES``), samples of a thread waiting (``IDLE``) are dropped, and each thread's CPU
time is split as its samples are; threads py-spy never sees with a Python frame (granian's
Rust runtime: HTTP parsing, socket IO) form their own stage. The waits are asyncio's: under
uvloop (granian's loop when installed) the loop's work has no Python frame of its own: its
samples end in the worker's serve call, counted as the event loop's. Prints a
table of CPU per request and share per stage, and the load average beside it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from benchmarks.serving import http_ingest, loadgen
from benchmarks.serving.bench import CONNECTIONS, WORKERS, _cms_task, upload_templates

RATE = 250  # py-spy samples per second per thread
WARMUP = 2.0  # s of load before sampling starts
# (stage, substrings of a frame "function (file:line)"); a sample belongs to the stage of its
# deepest frame that matches, tried in this order per frame.
STAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("JSON decode", ("aggregator/core/body.py", "json/decoder.py", "json/__init__.py")),
    ("shared decode + validation", ("shared/codec.py", "shared/wire.py", "shared/mechanisms/")),
    ("admission", ("aggregator/core/admission.py",)),
    ("fold (staged -> sums, with its SQL)", ("store/folding.py", "fold_", "add_rows", "bitsum")),
    ("stage packing", ("store/staging.py", "staged_rows")),
    ("SQLite (transaction, seen ids, staging rows)", ("store/sqlite", "store/sql.py")),
    ("group commit (hand-over, writer thread)", ("group_commit.py",)),
    ("metrics (prometheus_client)", ("prometheus_client", "aggregator/core/metrics.py")),
    (
        "intake (task, auth, quotas, answer)",
        (
            "aggregator/core/intake.py",
            "auth.py",
            "quotas.py",
            "tasks.py",
            "problems.py",
            "contract.py",
        ),
    ),
    ("body read (RSGI protocol())", ("RsgiBridge._body (", "_Deadline.read (")),
    ("response (RSGI response_bytes)", ("RsgiBridge._respond (",)),
    # uvloop runs in C under the worker's serve call: its samples end in granian's frame
    (
        "event loop (scheduling, cross-thread wake-ups; uvloop's own C code)",
        ("asyncio/", "_spawn_rsgi_worker ("),
    ),
    ("RSGI bridge (request coroutine, response)", ("rsgi_bridge.py", "granian/")),
)
# A sample whose deepest frame is one of these waits (py-spy --nonblocking cannot always
# tell): the loop's epoll, the writer's queue and the store's write lock. Not CPU.
IDLE = (
    "EpollSelector.select (",
    "GroupCommitter._run (",
    "GroupCommitter._gather (",
    "WriterLock.held (",
)
OTHER = "other Python"
RUST = "granian (Rust: HTTP, sockets, callbacks; no Python frame)"


def stage_of(stack: str) -> str:
    """Return the stage of one collapsed stack ("frame;frame;...", outermost first)."""
    for frame in reversed(stack.split(";")):
        for stage, marks in STAGES:
            if any(mark in frame for mark in marks):
                return stage
    return OTHER


def thread_cpu(pids: list[int]) -> dict[int, float]:
    """Return the user + system CPU seconds each thread of the processes has used so far."""
    ticks, found = os.sysconf("SC_CLK_TCK"), {}
    for pid in pids:
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                stat = (task / "stat").read_text(encoding="utf-8")
            except OSError:  # the thread ended meanwhile
                continue
            fields = stat.rsplit(")", 1)[1].split()
            found[int(task.name)] = (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
    return found


def stages(cpu: dict[int, float], stacks: list[str]) -> dict[str, float]:
    """Return CPU seconds per stage: each thread's CPU split as its py-spy samples are.

    ``stacks``: py-spy's raw lines (``thread (TID)...;frame;... count``). A thread's samples
    without a Python frame, and threads never sampled, are granian's own work.
    """
    per_thread: dict[int, Counter[str]] = {}
    for line in stacks:
        stack, _, number = line.rpartition(" ")
        head, _, frames = stack.partition(";")
        tid = int(head.split("(", 1)[1].split(")", 1)[0])
        if frames and frames.rpartition(";")[2].startswith(IDLE):
            continue
        stage = stage_of(frames) if frames else RUST
        per_thread.setdefault(tid, Counter())[stage] += int(number)
    out: defaultdict[str, float] = defaultdict(float)
    for tid, seconds in cpu.items():
        samples = per_thread.get(tid) or Counter({RUST: 1})
        total = sum(samples.values())
        for stage, count in samples.items():
            out[stage] += seconds * count / total
    return dict(out)


def profile(batch: int, seconds: float, folder: Path, rng: np.random.Generator) -> dict:
    """Load a fresh collector with ``batch``-report uploads; return rates and stage CPU."""
    with http_ingest.running_server(WORKERS) as collector:
        task = _cms_task(collector, f"profile-{batch}")
        templates = upload_templates(task, batch, rng)
        workers = http_ingest._children(collector.process.pid)
        found: dict = {}

        def load() -> None:
            path = f"/v1/tasks/{task.task_id}/reports"
            found["load"] = loadgen.run(
                collector.url, path, templates, CONNECTIONS, seconds + WARMUP + 1, folder
            )

        thread = threading.Thread(target=load)
        thread.start()
        time.sleep(WARMUP)
        before, started = thread_cpu(workers), time.monotonic()
        spies = [_spy(pid, seconds, folder / f"{batch}-{pid}.txt") for pid in workers]
        for spy in spies:
            spy.wait(timeout=seconds + 60)
        after, wall = thread_cpu(workers), time.monotonic() - started
        thread.join()
    cpu = {tid: after[tid] - before.get(tid, 0.0) for tid in after}
    stacks = [
        line
        for pid in workers
        for line in (folder / f"{batch}-{pid}.txt").read_text(encoding="utf-8").splitlines()
    ]
    rate = found["load"].requests_per_s
    return {
        "batch": batch,
        "requests_per_s": rate,
        "cpu_s": sum(cpu.values()),
        "wall_s": wall,
        "cpu_us_per_request": sum(cpu.values()) / (rate * wall) * 1e6,
        "stages": stages(cpu, stacks),
        "loadavg": os.getloadavg(),
    }


def _spy(pid: int, seconds: float, out: Path) -> subprocess.Popen[bytes]:
    command = [
        *_py_spy(),
        "record",
        "--pid",
        str(pid),
        "--duration",
        f"{seconds:.0f}",
        "--rate",
        str(RATE),
        "--nonblocking",
        "--threads",
        "--format",
        "raw",
        "--output",
        str(out),
    ]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _py_spy() -> list[str]:
    found = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(found).exists():
        raise SystemExit("py-spy not found: it is in the dev extra, pip install -e '.[dev]'")
    return [found]


def table(results: list[dict]) -> str:
    """Return the results as a Markdown table: share of the workers' CPU per stage."""
    stages = [stage for stage, _ in STAGES] + [OTHER, RUST]
    head = " | ".join(
        f"{r['batch']} report(s)/request: {r['requests_per_s']:,.0f} req/s, "
        f"{r['cpu_us_per_request']:,.0f} µs CPU/request (load {r['loadavg'][0]:.1f})"
        for r in results
    )
    lines = [f"| stage | {head} |", "|---" * (1 + len(results)) + "|"]
    for stage in stages:
        cells = []
        for r in results:
            share = r["stages"].get(stage, 0.0) / r["cpu_s"] if r["cpu_s"] else 0.0
            cells.append(f"{share:.0%} ({share * r['cpu_us_per_request']:,.0f} µs)")
        lines.append(f"| {stage} | {' | '.join(cells)} |")
    return "\n".join(lines)


def main() -> None:
    """Profile each batch size in turn and print the table."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.serving.cpu_profile")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 10])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--keep", type=Path, help="a folder to keep py-spy's stacks in")
    args = parser.parse_args()
    rng = np.random.default_rng(3)
    with tempfile.TemporaryDirectory(prefix="ldp-profile-") as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        results = [profile(b, args.seconds, folder, rng) for b in args.batches]
    print(table(results))


if __name__ == "__main__":
    main()
