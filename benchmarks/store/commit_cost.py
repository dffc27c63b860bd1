"""What one SQLite group commit costs, by uploads per group, and which pages its WAL frames are.

    python -m benchmarks.store.commit_cost [--sizes 1 2 4 8 16] [--groups 400]

The 1-report row of ``make bench`` (16 connections over 2 workers) commits groups of about 4
uploads: a transaction's fixed cost is shared by those few. For each group size, a fresh
SQLite store (no fold: ``staged_bytes`` out of reach) commits ``--groups`` groups of 1-report
CMS uploads (k = m = 1,024, every report from the SDK's privatizer, fresh ids; after as many
groups again to warm it), one after the other on this thread, as a collector's writer thread
commits them. Prints the CPU time of this thread (the store's checkpointer thread excluded) per
upload and per group, and the WAL frames one commit writes, by the table or index each page
belongs to (SQLite's ``dbstat``): each frame is a page written to the WAL and, later, copied
back by a checkpoint.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import struct
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.store.writer import NO_FOLD, upload_groups
from ldp_telemetry.aggregator.store.interface import StoredTask
from ldp_telemetry.aggregator.store.sqlite.backend import SqliteStore
from ldp_telemetry.shared import TaskConfig

WAL_HEADER, FRAME_HEADER = 32, 24


def wal_frames(path: str) -> tuple[bytes, list[int], int]:
    """Return the salts of the WAL's current generation, the page number of each of its
    frames, and its commits (frames left from before the WAL last restarted are skipped)."""
    data = Path(path).read_bytes() if Path(path).exists() else b""
    if len(data) < WAL_HEADER:
        return b"", [], 0
    page_size = struct.unpack(">I", data[8:12])[0]
    salts = data[16:24]
    pages, commits, offset = [], 0, WAL_HEADER
    while offset + FRAME_HEADER + page_size <= len(data):
        page, size_after_commit = struct.unpack(">II", data[offset : offset + 8])
        if data[offset + 8 : offset + 16] == salts:
            pages.append(page)
            commits += size_after_commit != 0  # a commit's last frame holds the database size
        offset += FRAME_HEADER + page_size
    return salts, pages, commits


def measure(size: int, groups: int) -> dict[str, Any]:
    """Commit ``groups`` groups of ``size`` 1-report uploads; return CPU and WAL frames."""
    task = TaskConfig.create(
        task_id="commit-cost", mechanism="cms", epsilon=4.0, k=1024, m=1024, min_batch_size=1
    )
    with tempfile.TemporaryDirectory(prefix="ldp-commit-cost-") as folder:
        path = str(Path(folder) / "cost.sqlite3")
        store = SqliteStore(path, staged_bytes=NO_FOLD)
        store.initialize()
        store.create_task(StoredTask(task))
        made = upload_groups(task, size, 1, 2 * groups)
        for group in made[:groups]:  # warm: the seen index and the staged table hold rows
            store.add_uploads(group)
        salts, before, committed = wal_frames(path + "-wal")
        started = time.thread_time()
        for group in made[groups:]:
            store.add_uploads(group)
        cpu = time.thread_time() - started
        now, pages, commits = wal_frames(path + "-wal")
        if now == salts:  # else the WAL restarted meanwhile: it holds measured commits only
            pages, commits = pages[len(before) :], commits - committed
        with sqlite3.connect(path) as conn:
            owner = dict(conn.execute("SELECT pageno, name FROM dbstat"))
    frames = Counter(owner.get(page, "(a page added since)") for page in pages)
    return {
        "size": size,
        "cpu_per_upload_us": cpu / (size * groups) * 1e6,
        "cpu_per_group_us": cpu / groups * 1e6,
        "frames_per_commit": len(pages) / max(commits, 1),
        "frames_by_owner": {name: count / max(commits, 1) for name, count in frames.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument("--groups", type=int, default=400)
    args = parser.parse_args()
    for size in args.sizes:
        found = measure(size, args.groups)
        owners = sorted(found["frames_by_owner"].items(), key=lambda item: -item[1])
        print(
            f"{size:>2} uploads a group: {found['cpu_per_upload_us']:.1f} µs CPU an upload, "
            f"{found['cpu_per_group_us']:.0f} µs a group; {found['frames_per_commit']:.1f} WAL "
            f"frames a commit ({', '.join(f'{name} {count:.2f}' for name, count in owners)}); "
            f"load {os.getloadavg()[0]:.1f}"
        )


if __name__ == "__main__":
    main()
