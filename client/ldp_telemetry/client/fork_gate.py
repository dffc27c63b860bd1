"""A fork never copies the process in the middle of an SQLite call of the SDK.

SQLite keeps, per process, the lock state of each open file (and mutexes around it). A child
forked while another thread of the parent is inside a transaction inherits that state without
the locks: its own new connections then find the file "locked" for good, or wait forever on a
mutex that no thread of the child will release. ``python -m benchmarks.client.fork_gate``
forks 200 children while a thread claims and releases batches: without the gate 113 found the
file locked for good and 7 hung; with it, none (2026-11-29, load 10-15).

Every use of SQLite by :class:`ldp_telemetry.client.sqlite_storage.SqliteStorage` happens
``inside`` the gate; ``os.fork`` (``os.register_at_fork``) first shuts it: new callers wait,
the fork waits until the callers inside have left (``MAX_WAIT`` at most: a transaction waits
for the file a few seconds at most), then the parent reopens it and the child starts with a
new one. Threads inside the gate run side by side: only a fork waits for them.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator

MAX_WAIT = 10.0  # seconds a fork waits for the SQLite calls in flight


class ForkGate:
    """Count the threads inside; a fork waits until none is (see the module docstring)."""

    def __init__(self) -> None:
        self._reset(0)

    def _reset(self, inside: int) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._inside = inside  # calls in flight, all threads
        self._shut = False
        self._depth = threading.local()  # calls in flight on this thread (nested)

    @contextlib.contextmanager
    def inside(self) -> Iterator[None]:
        """Run the block as one SQLite use: a fork waits for it to end."""
        depth = getattr(self._depth, "n", 0)
        with self._cond:
            while self._shut and not depth:  # a thread already inside never waits
                self._cond.wait()
            self._inside += 1
        self._depth.n = depth + 1
        try:
            yield
        finally:
            self._depth.n = depth
            with self._cond:
                self._inside -= 1
                self._cond.notify_all()

    def shut(self) -> None:
        """Before a fork: stop new calls, wait for those in flight (not the forking thread's)."""
        self._cond.acquire()
        self._shut = True
        own = getattr(self._depth, "n", 0)
        deadline = time.monotonic() + MAX_WAIT
        while self._inside > own and (left := deadline - time.monotonic()) > 0:
            self._cond.wait(left)

    def reopen(self) -> None:
        """After a fork, in the parent: let the waiting calls in."""
        self._shut = False
        self._cond.notify_all()
        self._cond.release()

    def renew(self) -> None:
        """After a fork, in the child: a new gate (the forking thread's calls still count)."""
        self._reset(getattr(self._depth, "n", 0))


GATE = ForkGate()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=GATE.shut, after_in_parent=GATE.reopen, after_in_child=GATE.renew)
