"""WAL checkpoints off the upload path: a thread per process copies the WAL into the database.

SQLite's automatic checkpoint (every 1,000 WAL pages) runs inside the ``COMMIT`` that crosses
the mark: that commit copies the WAL's pages into the database file and syncs both before
it returns, while its writer still holds the node's write lock (``lock.WriterLock``), so the
upload's acknowledgement and every other worker's transaction wait for it. Measured
(benchmarks/README.md, "The upload tail"): 2 workers, 1 and 10 reports per upload, 33-55
such commits per 8 s taking 20-140 ms each, the write lock held by checkpoints 9-20% of the
time; wrk's p99 (which counts a stall of the whole node for every request it held back) went
with them.

Here the store's connections switch the automatic checkpoint off and each commit wakes a
checkpointer thread instead, which checkpoints at most every ``INTERVAL`` seconds on its own
connection, without the write lock: a PASSIVE checkpoint copies what is committed and syncs
while the writers go on appending. The WAL starts again from its beginning only once it is
wholly in the database, which writers that never pause do not allow; so once the WAL holds
``RESTART_FRAMES`` frames, a second PASSIVE checkpoint under the write lock copies what was
appended during the first (tens of pages), and the next writer restarts the WAL. The WAL
stays bounded (about ``RESTART_FRAMES`` pages, 16 MiB, against SQLite's 1,000), and the write
lock is held by checkpoints a few times less long than with the automatic checkpoint
(measured in the same README section). A checkpoint only copies committed pages, with the
syncs of the store's ``synchronous``: what a commit made durable (its WAL frames, written
before ``COMMIT`` returns) is unchanged, and a process killed mid-checkpoint leaves a
database SQLite recovers as always. If no checkpoint runs (the thread failed, a reader pins
the WAL), ``faults.bound_wal`` still truncates the WAL past ``WAL_BOUND``.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable
from typing import Protocol, TypeVar

from ldp_telemetry.aggregator.core.faults import StoreUnavailable
from ldp_telemetry.aggregator.store.sqlite.lock import WriterLock

T = TypeVar("T")

log = logging.getLogger(__name__)

INTERVAL = 0.2  # s: the least time between two checkpoints while commits go on
# frames (pages) in the WAL from which the checkpoint also takes the write lock, so that the
# WAL restarts: 16 MiB of 4 KiB pages. Its second pass copies what the writers appended
# during the first, and syncs: taken after every pass (SQLite's 1,000 pages at this rate),
# the node's lock was held by checkpoints 6-13% of the time; from 4,096 frames on, 1% at 1
# report per upload and 5% at 10 (benchmarks/README.md, "The upload tail").
RESTART_FRAMES = 4096
IDLE = 5.0  # s without a commit after which the thread closes its connection and ends


class Checkpointer:
    """Checkpoint the WAL on a thread of this process after commits (:meth:`poke`)."""

    def __init__(
        self,
        connect: Callable[[], sqlite3.Connection],
        writer: WriterLock,
        *,
        interval: float = INTERVAL,
        idle: float = IDLE,
        restart_frames: int = RESTART_FRAMES,
    ) -> None:
        self._connect, self._writer = connect, writer
        self.interval, self.idle, self.restart_frames = interval, idle, restart_frames
        self._thread: threading.Thread | None = None
        self._forked()
        self.checkpoints = 0  # completed checkpoints (for tests)
        # a forked child (a server's worker) starts its own thread on its first commit: the
        # parent's does not cross the fork, and its lock may have been held at that moment
        renew_in_child(self)

    def _forked(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread = None

    def poke(self) -> None:
        """A transaction has committed: checkpoint within ``interval`` seconds."""
        with self._lock:
            self._wake.set()
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="ldp-checkpoint", daemon=True
                )
                self._thread.start()

    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            while True:
                self._wake.wait(self.idle)
                with self._lock:  # ends only if no poke came: poke starts a new thread
                    if not self._wake.is_set():
                        self._thread = None
                        return
                    self._wake.clear()
                try:
                    conn = conn or self._connect()
                    checkpoint(conn, self._writer, self.restart_frames)
                    self.checkpoints += 1
                except (sqlite3.Error, StoreUnavailable) as error:
                    # e.g. the file is gone or unwritable: uploads say so (503); the next
                    # poke tries again on a new connection
                    log.debug("WAL checkpoint failed: %s", error)
                    if conn is not None:
                        conn.close()
                    conn = None
                time.sleep(self.interval)
        finally:
            if conn is not None:
                conn.close()


class Renewable(Protocol):
    """An object owning a thread and locks of its process, which it makes anew in a child."""

    def _forked(self) -> None: ...


def while_alive(owner: T, call: Callable[[T], None]) -> Callable[[], None]:
    """Return a function that calls ``call(owner)`` while ``owner`` lives, else nothing: for
    registrations that cannot be undone (``os.register_at_fork``, ``atexit``) and must never
    keep their owner alive (a weak reference)."""
    mine = weakref.ref(owner)

    def run() -> None:
        found = mine()
        if found is not None:
            call(found)

    return run


def renew_in_child(owner: Renewable) -> None:
    """Call ``owner._forked()`` in every forked child while ``owner`` lives."""
    os.register_at_fork(after_in_child=while_alive(owner, lambda found: found._forked()))


def checkpoint(conn: sqlite3.Connection, writer: WriterLock, restart_frames: int) -> None:
    """Copy the WAL into the database while writers go on; once it holds ``restart_frames``
    frames, copy what they appended meanwhile under their lock, so that the next writer
    restarts the WAL from its beginning."""
    ((_, frames, _),) = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
    if frames >= restart_frames:
        with writer.held():
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
