"""SQLite folds off the write lock (store/sqlite/fold.py): computed from a snapshot, written
briefly, exactly once whatever folds, uploads or kills come between.

Every check compares the store's sums (folded + staged, as a read sees them) with the shared
accumulator of the same reports, and the stored ``staged_size`` with the staged rows' bytes.
"""

from __future__ import annotations

import os
import pickle
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ldp_telemetry.aggregator.store import StoredTask
from ldp_telemetry.aggregator.store.sqlite import fold
from ldp_telemetry.aggregator.store.sqlite.backend import SqliteStore
from ldp_telemetry.aggregator.store.staging import pack, stack
from ldp_telemetry.shared import TaskConfig
from tests.support.reports import envelopes, payloads
from tests.support.waiting import wait_until

DAY = 86_400
TASK = {"task_id": "fold-out", "mechanism": "cms", "epsilon": 3.0, "k": 64, "m": 32}


def cms_task() -> TaskConfig:
    return TaskConfig.create(**TASK, min_batch_size=1)


def words(count: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [f"w{i}" for i in rng.integers(0, 50, count)]


class Fed:
    """Reports sent to a store, and what a store holding them must hold."""

    def __init__(self, task: TaskConfig, seed: int = 7) -> None:
        self.task, self.dense = task, task.mechanism_object.new_sums()
        self.sent: list[Any] = []  # the payloads (their noise is not the seed's: a CSPRNG)
        self.rng = np.random.default_rng(seed)

    def upload(self, store: SqliteStore, count: int = 10, day: int = 0) -> None:
        """Send ``count`` reports."""
        reports = payloads(self.task, words(count, int(self.rng.integers(1 << 30))), self.rng)
        batch = envelopes(self.task, reports, 1.7e9 + day * DAY)
        assert store.add_reports(self.task, batch, [0] * count) == set()
        self.add(reports)

    def add(self, reports: list[Any]) -> None:
        self.sent += reports
        for report in reports:
            self.dense.add(report)

    def check(self, store: SqliteStore) -> None:
        """The store holds every report once; ``staged_size`` is the staged rows' bytes."""
        rows = self.task.mechanism_object.sums_shape[0]
        with store.read_sums(self.task, None, None) as sums:
            assert sums.total == self.dense.total
            assert np.array_equal(sums.n, self.dense.n)
            assert np.array_equal(sums.table[0:rows], self.dense.table)
        conn = sqlite3.connect(store.path)
        try:
            ((staged,),) = conn.execute("SELECT COALESCE(SUM(length(data)), 0) FROM staged")
            ((noted,),) = conn.execute("SELECT COALESCE(SUM(bytes), 0) FROM staged_size")
        finally:
            conn.close()
        assert noted == staged


def upload_bytes(task: TaskConfig, count: int = 10) -> int:
    rng = np.random.default_rng(1)
    return len(pack(stack(task.mechanism_object, payloads(task, words(count, 1), rng))))


def new_store(path: Path, staged_bytes: int) -> SqliteStore:
    store = SqliteStore(str(path), staged_bytes=staged_bytes, busy_timeout=5.0)
    store.initialize()
    return store


def rows_of(store: SqliteStore, table: str) -> int:
    conn = sqlite3.connect(store.path)
    try:
        return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
    finally:
        conn.close()


def test_the_thread_folds_what_an_upload_crossed_the_threshold_with(tmp_path: Path) -> None:
    task = cms_task()
    store = new_store(tmp_path / "db.sqlite3", staged_bytes=3 * upload_bytes(task))
    store.create_task(StoredTask(task))
    fed = Fed(task)
    for _ in range(3):
        fed.upload(store)
    wait_until(lambda: store._folds.folds == 1, "the fold thread folds once asked")
    assert rows_of(store, "staged") == 0 and rows_of(store, "sums") > 0
    fed.check(store)
    for day in range(2):  # a second bucket, and reports staged beside the folded ones
        fed.upload(store, day=day)
    fed.check(store)


def test_rows_staged_during_a_fold_stay_staged_with_their_bytes(tmp_path: Path) -> None:
    task = cms_task()
    store = new_store(tmp_path / "db.sqlite3", staged_bytes=1 << 30)  # no fold unless asked
    store.create_task(StoredTask(task))
    fed = Fed(task)
    for _ in range(4):
        fed.upload(store)
    with store._read() as tx:
        prepared = fold.prepare(tx, task, 0)
    assert prepared is not None and prepared.ids == 4
    for day in range(3):  # the fold races these uploads: they come after its snapshot
        fed.upload(store, day=day)
    with store._write() as tx:
        fold.apply(tx, prepared)
    assert rows_of(store, "staged") == 3
    fed.check(store)  # the 4 folded once, the 3 still staged, staged_size their bytes


def prepared_from(store: SqliteStore, task: TaskConfig) -> fold.Prepared:
    with store._read() as tx:
        prepared = fold.prepare(tx, task, 0)
    assert prepared is not None
    return prepared


def test_a_fold_another_process_committed_first_rolls_back_and_is_redone(
    tmp_path: Path,
) -> None:
    task = cms_task()
    path = tmp_path / "db.sqlite3"
    one, two = new_store(path, staged_bytes=1 << 30), new_store(path, staged_bytes=1 << 30)
    one.create_task(StoredTask(task))
    fed = Fed(task)
    for _ in range(4):
        fed.upload(one)
    first, second = prepared_from(one, task), prepared_from(two, task)  # the same snapshot
    with one._write() as tx:
        fold.apply(tx, first)
    fed.upload(one)
    with pytest.raises(fold.Raced), two._write() as tx:
        fold.apply(tx, second)  # its rows were folded: nothing of it is written
    fed.check(one)
    two.staged_bytes = 1
    two._fold_out(task)  # from a new snapshot: the one upload staged since
    assert rows_of(one, "staged") == 0
    fed.check(two)


def test_a_staged_id_used_again_after_another_fold_is_seen(tmp_path: Path) -> None:
    # SQLite gives a new row the largest rowid + 1: once another fold deleted every staged
    # row, the same ids come back for new reports; the check on the sums' n still sees it
    task = cms_task()
    path = tmp_path / "db.sqlite3"
    one, two = new_store(path, staged_bytes=1 << 30), new_store(path, staged_bytes=1 << 30)
    one.create_task(StoredTask(task))
    fed = Fed(task)
    for _ in range(3):
        fed.upload(one)
    late = prepared_from(two, task)
    one.fold_staged(task)  # another process folds everything (under the lock)
    for _ in range(3):
        fed.upload(one)  # the same ids again, 1 to 3
    conn = sqlite3.connect(path)
    assert [i for (i,) in conn.execute("SELECT id FROM staged ORDER BY id")] == [1, 2, 3]
    conn.close()
    with pytest.raises(fold.Raced), two._write() as tx:
        fold.apply(tx, late)
    fed.check(one)


def test_a_wide_sketch_is_folded_off_the_lock_when_its_rows_as_stored_fit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # issue 41, beside_analyst's fill: on k = 65,536 rows were counted at 8 bytes a counter,
    # 8 times what they keep (1 byte each here), and folded under the write lock as too large
    task = TaskConfig.create(**{**TASK, "k": 1024, "m": 256}, min_batch_size=1)
    store = new_store(tmp_path / "db.sqlite3", staged_bytes=1 << 30)
    store.create_task(StoredTask(task))
    fed = Fed(task)
    fed.upload(store, count=2000)
    blobs = [blob for *_, (_, _, written) in prepared_from(store, task).writes for blob in written]
    assert {len(blob) for blob in blobs} == {256}  # int8 counters
    kept = sum(map(len, blobs)) + fold.ROW_OBJECTS * len(blobs)
    under_lock: list[str] = []
    monkeypatch.setattr(store, "_fold_in", lambda tx, t: under_lock.append(t.task_id))
    monkeypatch.setattr(fold, "PREPARED_BYTES", kept // 2)
    with pytest.raises(fold.TooLarge):
        prepared_from(store, task)
    monkeypatch.setattr(fold, "PREPARED_BYTES", kept)  # under 8 bytes a counter (2,048 a row)
    store.staged_bytes = 1
    store._fold_out(task)
    assert under_lock == [] and rows_of(store, "staged") == 0
    fed.check(store)


def test_a_lagging_thread_cannot_let_staging_grow_past_the_inline_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = cms_task()
    size = upload_bytes(task)
    store = new_store(tmp_path / "db.sqlite3", staged_bytes=2 * size)
    store.create_task(StoredTask(task))
    asked: list[str] = []
    monkeypatch.setattr(store._folds, "ask", lambda t: asked.append(t.task_id))  # never folds
    assert store.inline_bound(task) == 4 * store.fold_threshold(task)
    fed = Fed(task)
    staged = []
    for _ in range(20):
        fed.upload(store)
        conn = sqlite3.connect(store.path)
        staged.append(conn.execute("SELECT COALESCE(SUM(bytes), 0) FROM staged_size").fetchone()[0])
        conn.close()
    assert asked and max(staged) < store.inline_bound(task)  # the upload folded inline
    assert staged.count(0) >= 2
    fed.check(store)


FEED = """
import pickle, sys
from pathlib import Path
from tests.aggregator.store.test_fold_out import Fed, cms_task, new_store, upload_bytes
path, seed, uploads, sent = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
task = cms_task()
store = new_store(Path(path), staged_bytes=2 * upload_bytes(task))
fed = Fed(task, seed)
for _ in range(uploads):
    fed.upload(store)
sent.write_bytes(pickle.dumps(fed.sent))
"""


def test_two_processes_uploading_and_folding_count_every_report_once(tmp_path: Path) -> None:
    task = cms_task()
    path = tmp_path / "db.sqlite3"
    store = new_store(path, staged_bytes=1 << 30)
    store.create_task(StoredTask(task))
    root = Path(__file__).resolve().parents[3]
    sent = [tmp_path / f"sent-{seed}" for seed in (11, 12)]
    feeders = [
        subprocess.Popen(
            [sys.executable, "-c", FEED, str(path), str(seed), "60", str(out)], cwd=root
        )
        for seed, out in zip((11, 12), sent, strict=True)
    ]
    assert [feeder.wait(timeout=120) for feeder in feeders] == [0, 0]
    fed = Fed(task)
    for out in sent:
        fed.add(pickle.loads(out.read_bytes()))
    assert rows_of(store, "sums") > 0  # some folds were written
    fed.check(store)


KILLED = """
import pickle, sys, threading, time
from pathlib import Path
from ldp_telemetry.aggregator.store.sqlite import fold
from tests.aggregator.store.test_fold_out import Fed, cms_task, new_store, upload_bytes
path, marker, sent = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
task = cms_task()
store = new_store(Path(path), staged_bytes=3 * upload_bytes(task))
between = threading.Event()
computed = fold.prepare
def stalled(tx, task, due):  # the snapshot is read and folded; the write never comes
    computed(tx, task, due)
    between.set()  # (a read snapshot: the uploads below go on)
    time.sleep(600)
fold.prepare = stalled
fed = Fed(task)
for _ in range(5):
    fed.upload(store)
assert between.wait(60)
sent.write_bytes(pickle.dumps(fed.sent))
marker.write_text("between")
time.sleep(600)
"""


def test_a_node_killed_between_the_snapshot_and_the_write_loses_nothing(
    tmp_path: Path,
) -> None:
    task = cms_task()
    path, marker, sent = tmp_path / "db.sqlite3", tmp_path / "marker", tmp_path / "sent"
    store = new_store(path, staged_bytes=1 << 30)
    store.create_task(StoredTask(task))
    root = Path(__file__).resolve().parents[3]
    doomed = subprocess.Popen(
        [sys.executable, "-c", KILLED, str(path), str(marker), str(sent)], cwd=root
    )
    try:
        wait_until(lambda: marker.exists() or doomed.poll() is not None, "the fold stalls")
        assert doomed.poll() is None
    finally:
        os.kill(doomed.pid, signal.SIGKILL)
        doomed.wait()
    fed = Fed(task)
    fed.add(pickle.loads(sent.read_bytes()))
    assert rows_of(store, "staged") == 5  # nothing of the fold was written
    fed.check(store)
    store.staged_bytes = 1
    store._fold_out(task)
    assert rows_of(store, "staged") == 0
    fed.check(store)


HOLD = """
import fcntl, os, sys, time, zlib
fd = os.open(sys.argv[1] + "-fold.lock", os.O_RDWR | os.O_CREAT)
fcntl.lockf(fd, fcntl.LOCK_EX, 1, zlib.crc32(sys.argv[2].encode()))
print("held", flush=True)
time.sleep(600)
"""


def test_a_task_another_process_is_folding_is_left_to_it_until_it_dies(tmp_path: Path) -> None:
    task = cms_task()
    store = new_store(tmp_path / "db.sqlite3", staged_bytes=1 << 30)
    store.create_task(StoredTask(task))
    fed = Fed(task)
    for _ in range(3):
        fed.upload(store)
    store.staged_bytes = 1
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, store.path, task.task_id], stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        store._fold_out(task)  # the other process folds it: not computed twice
        assert rows_of(store, "staged") == 3
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    store._fold_out(task)  # its lock went with it
    assert rows_of(store, "staged") == 0
    fed.check(store)


EXITS = """
import sys, time
from pathlib import Path
from ldp_telemetry.aggregator.store.sqlite import fold
from tests.aggregator.store.test_fold_out import Fed, cms_task, new_store, upload_bytes
path, marker = Path(sys.argv[1]), Path(sys.argv[2])
task = cms_task()
store = new_store(path, staged_bytes=2 * upload_bytes(task))
computed = fold.prepare

def slow_prepare(*args):
    marker.write_text("folding")
    time.sleep(1.0)  # the interpreter exits meanwhile
    return computed(*args)

fold.prepare = slow_prepare
Fed(task).upload(store)
Fed(task, 8).upload(store)  # past the threshold: the thread is asked
while not marker.exists():
    time.sleep(0.01)
"""


def test_the_interpreters_exit_waits_for_the_fold_under_way(tmp_path: Path) -> None:
    # a daemon thread left folding at exit is ended inside numpy's C++ code: SIGABRT
    task = cms_task()
    path, marker = tmp_path / "db.sqlite3", tmp_path / "marker"
    store = new_store(path, staged_bytes=1 << 30)
    store.create_task(StoredTask(task))
    root = Path(__file__).resolve().parents[3]
    exiting = subprocess.run(
        [sys.executable, "-c", EXITS, str(path), str(marker)], cwd=root, timeout=60
    )
    assert exiting.returncode == 0 and marker.exists()
    assert rows_of(store, "staged") == 0  # the fold under way ended before the process did
    assert rows_of(store, "sums") > 0
