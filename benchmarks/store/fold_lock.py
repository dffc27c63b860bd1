"""How long one fold holds SQLite's write lock: inside an upload (before) or off it (after).

python -m benchmarks.store.fold_lock                  # 3 rounds of 8 MiB staged, both ways
python -m benchmarks.store.fold_lock --rounds 1 --mib 1

Stages ``--mib`` MiB of the serving bench's uploads (CMS k = m = 1,024, 10 reports per upload,
groups of 4 uploads, one bucket) in a fresh SQLite store, then folds them alternately the two
ways: inside one write transaction, as an upload past the threshold did
(``SqliteStore._fold_in``), and as the fold thread does (``store/sqlite/fold.py``: ``prepare``
from a snapshot, then ``apply`` in a short write transaction). Prints the write lock held by
each, and where the time of each goes (its steps timed apart).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common.workload import zipf_values
from ldp_telemetry.aggregator.store import StoredTask, counters, sql
from ldp_telemetry.aggregator.store.interface import Upload
from ldp_telemetry.aggregator.store.sqlite import fold
from ldp_telemetry.aggregator.store.sqlite.backend import SqliteStore
from ldp_telemetry.shared import Envelope, TaskConfig, new_report_id

SPENT: defaultdict[str, float] = defaultdict(float)


def timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """Return ``function`` adding its seconds to ``SPENT[name]``."""

    def run(*args: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(*args)
        finally:
            SPENT[name] += time.perf_counter() - started

    return run


def timed_parts(name: str, function: Callable[..., Iterator[Any]]) -> Callable[..., Any]:
    """Return the generator ``function`` adding the seconds of its steps to ``SPENT[name]``."""

    def run(*args: Any) -> Iterator[Any]:
        parts = function(*args)
        while True:
            started = time.perf_counter()
            try:
                part = next(parts)
            except StopIteration:
                return
            finally:
                SPENT[name] += time.perf_counter() - started
            yield part

    return run


@contextmanager
def steps_timed() -> Iterator[None]:
    """Time a fold's steps apart (module functions patched for the block)."""
    patched = [
        (fold, "unpack", "unpack staged"),
        (sql, "unpack", "unpack staged"),
        (fold, "fold_parts", "fold (numpy)"),
        (sql, "fold_parts", "fold (numpy)"),
        (counters, "decode", "decode stored rows"),
        (counters, "encode", "encode rows"),
        (fold, "write_rows", "write rows"),
        (sql, "write_rows", "write rows"),
        (fold, "_n_between", "check n"),
    ]
    saved = [(module, attribute, getattr(module, attribute)) for module, attribute, _ in patched]
    for module, attribute, name in patched:
        wrap = timed_parts if attribute == "fold_parts" else timed
        setattr(module, attribute, wrap(name, getattr(module, attribute)))
    try:
        yield
    finally:
        for module, attribute, original in saved:
            setattr(module, attribute, original)


def stage(store: SqliteStore, task: TaskConfig, size: int, rng: np.random.Generator) -> None:
    """Stage 10-report uploads, 4 per transaction, until ``size`` bytes are staged."""
    mechanism: Any = task.mechanism_object
    bucket = task.floor_time(time.time())
    conn = store._connection()
    while conn.execute("SELECT COALESCE(SUM(length(data)), 0) FROM staged").fetchone()[0] < size:
        reports = mechanism.privatize_many(zipf_values(40, rng), rng)
        uploads = [
            Upload(
                task,
                [
                    Envelope(new_report_id(), task.fingerprint, bucket, reports.report(i))
                    for i in range(first, first + 10)
                ],
                [bucket + 10**6] * 10,
            )
            for first in range(0, 40, 10)
        ]
        store.add_uploads(uploads)


def inline(store: SqliteStore, task: TaskConfig) -> dict[str, float]:
    """Fold as an upload did: everything under the write lock."""
    started = time.perf_counter()
    with store._write() as tx:
        store._fold_in(tx, task)
    return {"write lock held": time.perf_counter() - started}


def off_the_lock(store: SqliteStore, task: TaskConfig) -> dict[str, float]:
    """Fold as the fold thread does: computed from a snapshot, then a short write."""
    started = time.perf_counter()
    with store._read() as tx:
        prepared = fold.prepare(tx, task, 0)
    assert prepared is not None
    computed = time.perf_counter()
    snapshot = {f"snapshot: {name}": seconds for name, seconds in SPENT.items()}
    SPENT.clear()  # from here on, what the write lock holds
    with store._write() as tx:
        fold.apply(tx, prepared)
    return {
        "computed from a snapshot": computed - started,
        **snapshot,
        "write lock held": time.perf_counter() - computed,
    }


def measure(rounds: int, mib: float) -> list[tuple[str, dict[str, float]]]:
    """Return (way, seconds by step) of each fold, the two ways alternately."""
    rng = np.random.default_rng(1)
    found = []
    with tempfile.TemporaryDirectory(prefix="ldp-fold-lock-") as folder:
        store = SqliteStore(str(Path(folder) / "fold.sqlite3"), staged_bytes=1 << 40)
        store.initialize()
        task = TaskConfig.create(task_id="bench-10", mechanism="cms", epsilon=4.0, k=1024, m=1024)
        store.create_task(StoredTask(task))
        stage(store, task, int(mib * 2**20), rng)
        store.fold_staged(task)  # the sums rows exist from here on, as on a serving node
        for _ in range(rounds):
            for way, run in (("inside the upload", inline), ("off the lock", off_the_lock)):
                stage(store, task, int(mib * 2**20), rng)
                SPENT.clear()
                with steps_timed():
                    spent = run(store, task)
                rest = spent["write lock held"] - sum(SPENT.values())
                found.append(
                    (way, {**spent, **SPENT, "rest of the lock (reads, deletes, commit)": rest})
                )
    return found


def main() -> None:
    """Print each fold's write lock and steps."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mib", type=float, default=8.0, help="staged MiB per fold")
    args = parser.parse_args()
    for way, spent in measure(args.rounds, args.mib):
        steps = ", ".join(f"{name} {seconds * 1000:.1f}" for name, seconds in spent.items())
        print(f"{way}: {steps} (ms)")


if __name__ == "__main__":
    main()
