"""Folds off the write lock: a task's staged reports summed from a snapshot, written briefly.

A fold adds a task's staged reports to its sums and roll-up and deletes them. Done inside the
upload that crossed the task's ``fold_threshold`` (8 MiB of 10-report CMS uploads), it held the
node's write lock 220-410 ms every 4-8 s while every upload of every worker waited: wrk's p99
at 10 reports per request (benchmarks/README.md, "The upload tail"). Measured on the bench's
task (k = m = 1,024, 1,530 staged rows), of that time: reading and unpacking the staged rows
and folding them (numpy) 45%; merging them into the touched sums and roll-up rows 37% (reading,
decoding and encoding those 15%); deleting the staged rows 13%; the commit 4% ("Folds off the
write lock" in the same README: the lock is now held 94-135 ms against 351-450 ms).

Here the upload only asks a thread of its process (:class:`FoldThread`), which:

1. in one read snapshot (writers go on) takes the task's staged rows up to an id ``X``, folds
   them, and computes every sums and roll-up row they touch with them added (:func:`prepare`);
   and the sum of ``n`` over each touched block of rows;
2. in one short write transaction (:func:`apply`) checks that those sums of ``n`` did not change,
   writes the computed rows, deletes the task's staged rows ``id <= X`` (exactly as many as it
   read) and takes their bytes off ``staged_size`` (rows staged meanwhile stay, with theirs).

Why the check suffices: sums rows are only ever added to (nothing deletes them; ``n`` counts
reports, so each fold raises the ``n`` of every row it touches), and a fold takes every staged
row of its snapshot. So any fold of the task committed after our snapshot either read our rows
(then it touched our rows: a sum of ``n`` rose) or read rows that were still staged at our
snapshot (ours again). An unchanged ``n`` therefore means no fold came between: the stored rows
we computed from are the current ones, and our staged rows are still there, each once (a staged
id could otherwise be reused once deleted: SQLite's rowid is the largest + 1). Otherwise the
transaction rolls back and the fold starts again from a new snapshot, if still due. A roll-up
not yet built, or a fold touching more than ``PREPARED_BYTES`` of rows, is folded inside the
write lock as before (:meth:`SqliteStore._fold_in`), and so is a task whose staged bytes reach
``inline_bound``: a lagging thread cannot let staging grow without limit.

A process killed between the snapshot and the write has written nothing: the staged rows stay
for the next fold, and reads add them as always (:mod:`..staged_view`).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import logging
import os
import threading
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ldp_telemetry.aggregator.store.folding import fold_parts
from ldp_telemetry.aggregator.store.sql import Tx, Written, merged_rows, write_rows
from ldp_telemetry.aggregator.store.sqlite.checkpoint import renew_in_child, while_alive
from ldp_telemetry.aggregator.store.staging import unpack
from ldp_telemetry.shared import TaskConfig

log = logging.getLogger(__name__)

# bytes of rows a fold may keep computed ahead of its write, counted as stored (counters are
# encoded as narrow as they allow: 1 KiB for a CMS row of m = 1,024, not 8); a larger fold is
# folded block by block under the lock as before. Counted at 8 bytes per counter, a fold of
# 85,000 reports on k = 65,536 (41,000 rows each in sums and roll-up: 84 MB kept, 670 MB so
# counted) went under the lock and held it 1.0-2.0 s (uploads of 1.0-2.7 s in the fill of
# benchmarks/README.md's "The 1.6 s upload beside the analyst"); written off it, 0.5-0.8 s.
PREPARED_BYTES = 256 << 20
ROW_OBJECTS = 113  # bytes of Python objects per kept row beside its blob: the blob's header,
# 33, its row and n as ints, 2 x 28, and three list slots, 24 (sys.getsizeof, CPython 3.11)
IDLE = 30.0  # s without a fold asked after which the thread closes its connection and ends
CLOSE_WAIT = 30.0  # s the interpreter's exit waits for a fold under way
ATTEMPTS = 3  # snapshots tried before a fold that keeps racing others is done under the lock

SUMS_KEY = ("task_id", "bucket", "slice")
ROLLUP_KEY = ("task_id", "slice")


class TaskLocks:
    """A try-lock per task across the node's processes: one fold of a task computed at a time.

    Every upload past a task's threshold asks its own process's thread, so without it each
    worker computed the same fold and all but one rolled back: twice the CPU of a fold on a
    node of two workers. A POSIX record lock of one byte of ``<database>-fold.lock`` at an
    offset given by the task id; the kernel releases it when its process dies (kill -9), and
    a process that cannot open the file folds without it (the write's check keeps it exact).
    """

    def __init__(self, database: str) -> None:
        self.path = database + "-fold.lock"
        self._pid, self._fd = 0, -1

    @contextlib.contextmanager
    def held(self, task_id: str) -> Iterator[bool]:
        """Yield whether this process holds the task's lock (False: another process folds it)."""
        if self._pid != os.getpid():  # one descriptor per process: a fork opens its own
            try:
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            except OSError:
                self._fd = -1
            self._pid = os.getpid()
        if self._fd < 0:
            yield True
            return
        offset = zlib.crc32(task_id.encode())
        try:
            fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
        except OSError:  # taken: the rows are being folded; a later upload asks again
            yield False
            return
        try:
            yield True
        finally:
            fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, offset)


class Raced(Exception):
    """Another fold of the task committed after this fold's snapshot (roll back, try again)."""


@dataclass
class Prepared:
    """A fold computed from a snapshot, to be written by :func:`apply`."""

    task_id: str
    last_id: int  # the largest staged id folded
    ids: int = 0  # how many staged rows were folded
    folded_bytes: int = 0
    # (table, key columns, key values, first row, last row, sum of n there at the snapshot)
    checks: list[tuple[str, tuple[str, ...], tuple[Any, ...], int, int, int]] = field(
        default_factory=list
    )
    writes: list[tuple[str, tuple[str, ...], tuple[Any, ...], Written]] = field(
        default_factory=list
    )


class TooLarge(Exception):
    """The fold would compute more than ``PREPARED_BYTES`` ahead: fold under the lock."""


def prepare(tx: Tx, task: TaskConfig, due: int) -> Prepared | None:
    """Compute the task's fold from ``tx``'s snapshot; None if under ``due`` bytes are staged.

    Raises :class:`TooLarge` once the rows computed pass ``PREPARED_BYTES`` (as stored).
    """
    staged_size = list(
        tx.execute("SELECT bytes FROM staged_size WHERE task_id = ?", (task.task_id,))
    )
    if not staged_size or staged_size[0][0] < due:
        return None  # another fold took them meanwhile
    staged = list(
        tx.execute(
            "SELECT id, bucket, slice, data FROM staged WHERE task_id = ? ORDER BY id",
            (task.task_id,),
        )
    )
    if not staged:
        return None
    prepared = Prepared(task.task_id, int(staged[-1][0]), ids=len(staged))
    by_key: defaultdict[tuple[int, int], list[bytes]] = defaultdict(list)
    for _, bucket, slice_index, data in staged:
        by_key[int(bucket), int(slice_index)].append(bytes(data))
        prepared.folded_bytes += len(data)
    del staged
    mechanism = task.mechanism_object
    rolled_up = mechanism.sums_shape[0] > 1
    budget = PREPARED_BYTES
    for (bucket, slice_index), blobs in sorted(by_key.items()):
        batch = unpack(mechanism, blobs)
        blobs.clear()
        for part in fold_parts(mechanism, batch):
            low, high = int(part.rows.min()), int(part.rows.max())
            targets: list[tuple[str, tuple[str, ...], tuple[Any, ...]]] = [
                ("sums", SUMS_KEY, (task.task_id, bucket, slice_index))
            ]
            if rolled_up:
                targets.append(("rollup", ROLLUP_KEY, (task.task_id, slice_index)))
            for table, key, values in targets:
                before = _n_between(tx, table, key, values, low, high)
                prepared.checks.append((table, key, values, low, high, before))
                written = merged_rows(tx, table, key, values, part)
                # as kept: the part's int64 block (ROWS_PER_PART rows at most) is gone by now
                budget -= sum(map(len, written[2])) + ROW_OBJECTS * len(written[2])
                if budget < 0:
                    raise TooLarge(task.task_id)
                prepared.writes.append((table, key, values, written))
    return prepared


def apply(tx: Tx, prepared: Prepared) -> None:
    """Write a prepared fold inside the write transaction ``tx``; raise :class:`Raced` (the
    caller rolls back) if another fold of the task committed after its snapshot."""
    for table, key, values, low, high, before in prepared.checks:
        if _n_between(tx, table, key, values, low, high) != before:
            raise Raced(prepared.task_id)
    deleted = tx.execute(
        "DELETE FROM staged WHERE task_id = ? AND id <= ?", (prepared.task_id, prepared.last_id)
    ).rowcount
    if deleted != prepared.ids:  # cannot happen after the checks; never write if it does
        raise Raced(prepared.task_id)
    for table, key, values, written in prepared.writes:
        write_rows(tx, table, key, values, written)
    tx.execute(
        "UPDATE staged_size SET bytes = bytes - ? WHERE task_id = ?",
        (prepared.folded_bytes, prepared.task_id),
    )


def _n_between(
    tx: Tx, table: str, key: tuple[str, ...], values: tuple[Any, ...], low: int, high: int
) -> int:
    where = " AND ".join(f"{column} = ?" for column in key)
    ((total,),) = tx.execute(
        f"SELECT COALESCE(SUM(n), 0) FROM {table} WHERE {where} AND row >= ? AND row <= ?",
        (*values, low, high),
    )
    return int(total)


class FoldThread:
    """One thread per process that runs the folds asked for, each task at most once queued
    (re-created after a fork; ends after ``idle`` seconds without a fold asked)."""

    def __init__(
        self, fold: Callable[[TaskConfig], None], done: Callable[[], None], idle: float = IDLE
    ) -> None:
        self._fold, self._done, self.idle = fold, done, idle
        self._forked()
        self.folds = 0  # folds run (for tests)
        # a forked child (a server's worker) starts its own thread when first asked: the
        # parent's does not cross the fork, and its lock may have been held at that moment
        renew_in_child(self)
        # the interpreter's exit waits for a fold under way (close says why)
        atexit.register(while_alive(self, lambda found: found.close()))

    def _forked(self) -> None:
        self._wake = threading.Condition()
        self._due: dict[str, TaskConfig] = {}  # insertion order: oldest request first
        self._crossed: set[str] = set()  # tasks an uncommitted upload took past the threshold
        self._thread: threading.Thread | None = None
        self._closing = False

    def close(self, timeout: float = CLOSE_WAIT) -> None:
        """Start no more folds and wait for the one under way; what is staged stays staged.

        Called at the interpreter's exit: a daemon thread still folding when the interpreter
        finalizes is ended inside numpy's C++ code, which aborts the process ("terminate called
        without an active exception", SIGABRT: 2 exits in 40 of a process that uploaded past a
        threshold and returned at once, before this). Nothing of a fold is written before its
        short transaction, so stopping between folds loses nothing.
        """
        with self._wake:
            self._closing = True
            self._due.clear()
            thread = self._thread
            self._wake.notify()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def crossed(self, task_id: str) -> None:
        """An upload, not yet committed, took the task past its fold threshold."""
        with self._wake:
            self._crossed.add(task_id)

    def committed(self, task: TaskConfig) -> None:
        """An upload of the task committed: fold it soon if it crossed the threshold."""
        with self._wake:
            if task.task_id not in self._crossed:
                return
            self._crossed.discard(task.task_id)
        self.ask(task)

    def ask(self, task: TaskConfig) -> None:
        """Fold the task soon (a no-op if it is already waiting)."""
        with self._wake:
            if self._closing:
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="ldp-fold", daemon=True)
                self._thread.start()
            self._due.setdefault(task.task_id, task)
            self._wake.notify()

    def _run(self) -> None:
        try:
            while True:
                with self._wake:
                    if not self._due and not self._closing:
                        self._wake.wait(self.idle)
                    if not self._due:  # ends only if nothing is due: ask starts a new thread
                        self._thread = None
                        return
                    task = self._due.pop(next(iter(self._due)))
                try:
                    self._fold(task)
                except Exception as error:  # staged rows stay: the next fold or read takes them
                    log.warning("folding task %s failed: %s", task.task_id, error)
                self.folds += 1
        finally:
            self._done()
