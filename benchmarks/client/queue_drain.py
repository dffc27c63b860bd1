"""Measure the on-disk queue drained by several processes at once.

Run: ``.venv/bin/python -m benchmarks.client.queue_drain [--reports 20000] [--send-ms 5]``.
Queues ``--reports`` reports of 300 bytes in one data_dir, then 1, 2 and 4 processes
(``os.fork``) drain it as the uploader does: take a batch of 500, "send" it (a sleep of
``--send-ms``, the collector's round trip), remove it. ``claim`` is the SDK's way
(``SqliteStorage.claim``, then ``remove``); ``no claim`` is the queue before claims (read the
oldest batch, send, delete), in the same run. Prints the drain time, the reports sent (each
once: ``sent`` = ``reports``) and how many sends were duplicates.

2026-11-29, ``--reports 5000``, load 15: claim 0.56 / 1.00 / 0.75 s for 1 / 2 / 4 processes,
never a duplicate; no claim 0.52 / 0.55 / 0.66 s with 0 / 4,000 / 4,500 duplicate sends. With
20,000 reports (load 8-12, 4 processes without claims not finished): claim 2.45 / 1.51 / 1.65 s,
no claim 1.00 / 0.63 s with 0 / 19,000 duplicates; a claim writes each row once more.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sqlite3
import tempfile
import time
from collections import Counter
from pathlib import Path

from ldp_telemetry.client.privacy_ledger import Charge, Limits
from ldp_telemetry.client.settings import MAX_REPORTS_PER_PERIOD
from ldp_telemetry.client.sqlite_storage import SqliteStorage
from ldp_telemetry.client.storage import Pending, Slot

BATCH = 500
MIB = 1 << 20


def fill(data_dir: Path, reports: int) -> None:
    """Queue ``reports`` reports of 300 bytes."""
    storage = SqliteStorage(data_dir, max_queue=reports, max_bytes=reports * 400)
    limits, free = Limits(MAX_REPORTS_PER_PERIOD), Charge(0.0, 0, None)
    for i in range(reports):
        slot = Slot("task", 0, 1, i.to_bytes(4, "big"))
        storage.admit(slot, free, limits, functools.partial(Pending, "task", f"id-{i}", "x" * 300))
    storage.close()


def drain_claimed(data_dir: Path, send: float) -> list[str]:
    """Drain as the SDK does; return the report ids this process sent."""
    storage = SqliteStorage(data_dir, max_queue=1, max_bytes=1)
    sent: list[str] = []
    while storage.count():
        batch = storage.claim(BATCH, MIB, 60.0)
        if not batch:  # the rest is claimed by the others
            time.sleep(send)
            continue
        time.sleep(send)
        sent.extend(p.report_id for p in batch)
        storage.remove(p.report_id for p in batch)
    storage.close()
    return sent


def drain_unclaimed(data_dir: Path, send: float) -> list[str]:
    """Drain as the queue did before claims: read the oldest batch, send it, delete it."""
    db = sqlite3.connect(data_dir / "queue.sqlite3", timeout=5, isolation_level=None)
    sent: list[str] = []
    while True:
        rows = db.execute("SELECT report_id FROM outbox ORDER BY seq LIMIT ?", (BATCH,))
        ids = [report_id for (report_id,) in rows]
        if not ids:
            break
        time.sleep(send)
        sent.extend(ids)
        db.execute("BEGIN IMMEDIATE")
        db.executemany("DELETE FROM outbox WHERE report_id = ?", [(i,) for i in ids])
        db.execute("COMMIT")
    db.close()
    return sent


def run(way: str, processes: int, reports: int, send: float) -> tuple[float, int, int]:
    """Return (seconds, sends, duplicate sends) of ``processes`` draining ``reports``."""
    data_dir = Path(tempfile.mkdtemp())
    fill(data_dir, reports)
    drain = drain_claimed if way == "claim" else drain_unclaimed
    start = time.perf_counter()
    pids = []
    for n in range(processes):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                (data_dir / f"sent-{n}.json").write_text(json.dumps(drain(data_dir, send)))
                code = 0
            finally:
                os._exit(code)
        pids.append(pid)
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    seconds = time.perf_counter() - start
    sends: Counter[str] = Counter()
    for n in range(processes):
        sends.update(json.loads((data_dir / f"sent-{n}.json").read_text()))
    assert len(sends) == reports, "a report was never sent"
    return seconds, sum(sends.values()), sum(sends.values()) - reports


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=20_000)
    parser.add_argument("--send-ms", type=float, default=5.0)
    args = parser.parse_args()
    for processes in (1, 2, 4):
        for way in ("claim", "no claim"):
            seconds, sends, duplicates = run(way, processes, args.reports, args.send_ms / 1000)
            print(
                f"{processes} process(es)  {way:8}  {seconds:6.2f} s  "
                f"{args.reports / seconds:8.0f} reports/s  sent {sends}  duplicates {duplicates}"
            )


if __name__ == "__main__":
    main()
