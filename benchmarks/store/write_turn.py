"""A node's two writers on one SQLite file: gather then wait for the lock, or the reverse.

    python -m benchmarks.store.write_turn [--seconds 6] [--rounds 3] [--batches 1 10]

Two processes (a collector node's two workers) each run a
:class:`~ldp_telemetry.aggregator.store.group_commit.GroupCommitter` on the same SQLite file
(the collector's defaults: WAL, ``synchronous=NORMAL``), fed by ``--threads`` closed-loop
submitters each (16 uploads in flight, as 16 connections over 2 workers), CMS k = m = 1024,
fresh report ids, reports drawn from the SDK's privatizer. Two ways, alternately in every
round so both see the same machine load: ``gather first`` (the collector's: the writer takes
what is queued, then waits for the file's write lock) and ``turn first`` (tried, not kept:
the writer waits for the lock, then takes what queued meanwhile; benchmarks/README.md, "One
write turn per node"). ``--one-writer``
adds a bound for one writer per node: all the submitters in one process with one writer
(what a node-wide writer would group at best, without the hand-over between processes it
would need). Per way: uploads committed per second, uploads per transaction and the
processes' CPU per upload. No HTTP: the served figures are ``benchmarks.serving.bench``'s.
"""

from __future__ import annotations

import argparse
import fcntl
import multiprocessing
import os
import tempfile
import threading
import time
from collections.abc import Sequence
from multiprocessing.queues import Queue
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common.workload import zipf_values
from ldp_telemetry.aggregator.store.group_commit import GroupCommitter
from ldp_telemetry.aggregator.store.interface import StoredTask, Upload
from ldp_telemetry.aggregator.store.sqlite.backend import SqliteStore
from ldp_telemetry.shared import Envelope, TaskConfig, new_report_id

WORKERS = 2
POOL = 2_000  # privatized reports per worker, reused with fresh ids
WINDOW = 7 * 86_400


class TurnFirst(GroupCommitter):
    """The committer tried: wait for the file's write lock, then gather what is queued.

    The writer takes the store's ``flock`` (its thread's descriptor) before it gathers; the
    transaction's own lock on the same descriptor is then granted at once, and its unlock
    after ``COMMIT`` ends the turn.
    """

    def _gather(self, first: Any) -> Any:
        store: Any = self.store  # a SqliteStore: its WriterLock's descriptor for this thread
        descriptor = store._writer._descriptor()
        if descriptor is not None:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
        return super()._gather(first)


class _Counting(SqliteStore):
    """A SQLite store that counts its group commits."""

    groups = 0

    def add_uploads(self, uploads: Sequence[Upload]) -> list[set[bytes]]:
        self.groups += 1
        return super().add_uploads(uploads)


def _task() -> TaskConfig:
    return TaskConfig.create(
        task_id="turn", mechanism="cms", epsilon=4.0, k=1024, m=1024, min_batch_size=1
    )


def _worker(
    path: str, way: str, batch: int, threads: int, seconds: float, start: float, out: Queue
) -> None:
    task, store = _task(), _Counting(path)
    committer = (TurnFirst if way == "turn first" else GroupCommitter)(store)
    rng = np.random.default_rng(os.getpid())
    reports = task.mechanism_object.privatize_many(zipf_values(POOL, rng), rng)
    bucket = task.floor_time(time.time())
    counts = [0] * threads
    time.sleep(max(0.0, start - time.time()))  # both workers start together
    deadline, before = time.monotonic() + seconds, os.times()

    def submitter(index: int) -> None:
        turn = index * 97
        while time.monotonic() < deadline:
            envelopes = [
                Envelope(new_report_id(), task.fingerprint, bucket, reports.report(i % POOL))
                for i in range(turn, turn + batch)
            ]
            committer.add(Upload(task, envelopes, [bucket + WINDOW] * batch))
            counts[index] += 1
            turn += batch

    running = [threading.Thread(target=submitter, args=(i,)) for i in range(threads)]
    for thread in running:
        thread.start()
    for thread in running:
        thread.join()
    after = os.times()
    committer.close()
    cpu = after.user + after.system - before.user - before.system
    out.put({"uploads": sum(counts), "groups": store.groups, "cpu": cpu})


def measure(way: str, batch: int, threads: int, seconds: float) -> dict[str, float]:
    """Return uploads/s, uploads per transaction and CPU µs per upload of one way."""
    context = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="ldp-turn-") as folder:
        path = str(Path(folder) / "turn.sqlite3")
        store = SqliteStore(path)
        store.initialize()
        store.create_task(StoredTask(_task()))
        out: Queue = context.Queue()
        start = time.time() + 3.0  # spawned interpreters import first
        processes, threads = (1, threads * WORKERS) if way == "one writer" else (WORKERS, threads)
        workers = [
            context.Process(target=_worker, args=(path, way, batch, threads, seconds, start, out))
            for _ in range(processes)
        ]
        for worker in workers:
            worker.start()
        found = [out.get(timeout=seconds + 120) for _ in workers]
        for worker in workers:
            worker.join(timeout=60)
    uploads = sum(f["uploads"] for f in found)
    return {
        "uploads_per_s": uploads / seconds,
        "per_group": uploads / max(1, sum(f["groups"] for f in found)),
        "cpu_us": sum(f["cpu"] for f in found) / max(1, uploads) * 1e6,
        "load": os.getloadavg()[0],
    }


def main() -> None:
    """Measure both ways alternately and print one line per figure."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.store.write_turn")
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 10])
    parser.add_argument("--threads", type=int, default=8, help="submitters per worker")
    parser.add_argument("--one-writer", action="store_true", help="add the one-writer bound")
    args = parser.parse_args()
    ways = ("gather first", "turn first", *(["one writer"] if args.one_writer else []))
    for batch in args.batches:
        for round_ in range(args.rounds):
            for way in ways:
                found = measure(way, batch, args.threads, args.seconds)
                print(
                    f"{batch:>3} report(s)/upload, round {round_ + 1}, {way:>12}: "
                    f"{found['uploads_per_s']:7,.0f} uploads/s, {found['per_group']:4.1f} "
                    f"uploads/transaction, {found['cpu_us']:5.0f} µs CPU/upload "
                    f"(load {found['load']:.1f})",
                    flush=True,
                )


if __name__ == "__main__":
    main()
