"""A queue for SQLite's write lock across the collector's worker processes.

SQLite has one writer at a time. A connection that finds the lock taken polls for it in
its busy handler, sleeping 1, 2, 5, 10 ... ms between tries: with two workers committing
back to back, a transaction that takes ~0.3 ms made the other wait 1–2 ms (measured:
``ldp_store_lock_wait_seconds``, 3.7 s of waits in 8 s of 1-report uploads, one in eight
transactions over 1 ms). Here a writer first takes an ``flock`` on a file beside the
database: the kernel wakes the next waiter the moment the lock is released, and the
SQLite lock it then asks for is free. The flock only orders our own writers; SQLite's
lock (and its busy handler, for any other program) still guards the data, so a writer
that cannot open the file (read-only folder, full disk) simply goes without it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Iterator

SUFFIX = "-writer.lock"


class WriterLock:
    """An exclusive ``flock`` per writing thread on ``<database>-writer.lock``."""

    def __init__(self, database: str) -> None:
        self.path = database + SUFFIX
        self._local = threading.local()

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Hold the lock for the block (without it if the lock file cannot be opened)."""
        descriptor = self._descriptor()
        if descriptor is None:
            yield
            return
        fcntl.flock(descriptor, fcntl.LOCK_EX)  # waits without the GIL
        try:
            yield
        finally:
            fcntl.flock(descriptor, fcntl.LOCK_UN)

    def _descriptor(self) -> int | None:
        # One open file per thread and per process: flock locks belong to an open file, so
        # a descriptor shared with a forked child or another thread would not exclude it.
        if getattr(self._local, "pid", None) != os.getpid():
            try:
                self._local.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            except OSError:
                self._local.fd = None
            self._local.pid = os.getpid()
        descriptor: int | None = self._local.fd
        return descriptor
