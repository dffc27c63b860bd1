"""What the SQLite store does when its file or disk fails: say so, never write into the void.

- A full disk (SQLITE_FULL) becomes :class:`StoreFull` (HTTP 507), a read-only or failing
  file (SQLITE_READONLY, SQLITE_IOERR, SQLITE_CANTOPEN) or a lock that stayed busy
  :class:`StoreUnavailable` (503): :func:`ldp_telemetry.aggregator.core.faults.classify_sqlite`,
  which the shuffler's spool shares. Both answer with Retry-After and nothing was committed,
  so a client's retry is safe. Other errors (bugs) pass through unchanged.
- The database file's identity (device and inode) is taken when the store opens it and
  checked before every write: a file deleted or replaced under a running collector stops
  ingest (503, /readyz unready) instead of committing into an unlinked inode that vanishes
  at restart. Ingest resumes once the right file is back at its path (its identity
  matches again), or restart the collector on the file it should use; no connection
  opened meanwhile creates a file (the store connects with ``mode=rw``).
- The WAL is kept bounded: the checkpointer (:mod:`.checkpoint`) restarts it every
  ``RESTART_FRAMES`` pages, and ``journal_size_limit`` trims the file to ``WAL_LIMIT`` after
  a restart. A reader keeps it from restarting for as long as its snapshot lasts, and
  overlapping reads (an analyst looping estimates of seconds each) for as long as they
  overlap: the WAL grows meanwhile. So every ``CHECK_EVERY`` commits a connection looks at
  the WAL's size and, past ``WAL_BOUND``, runs a TRUNCATE checkpoint, which makes every
  writer wait until the readers of the WAL are done (SQLite blocks new writers while it
  waits, within the busy timeout). That wait stalls the node's uploads for as long as the
  read under way (an estimate: seconds), hence a bound for the disk only. At 64 MiB, reached
  16 s into a looping analyst beside 4 paced devices (the WAL grew ~5 MB/s) or by one fold
  of a wide sketch (130 MB of WAL), it held every upload 1.3-20 s (issue 41's 1.6 s upload:
  benchmarks/README.md, "The 1.6 s upload beside the analyst"). 1 GiB is minutes of reads
  without a gap.
"""

from __future__ import annotations

import os
import sqlite3

from ldp_telemetry.aggregator.core.faults import StoreUnavailable

WAL_LIMIT = 64 << 20  # bytes: the WAL file's size after a restart (journal_size_limit)
WAL_BOUND = 1 << 30  # bytes: past this a writer waits for the readers to truncate the WAL
CHECK_EVERY = 64  # commits per connection between two looks at the WAL's size


class FileIdentity:
    """The (device, inode) of the database file as opened; checked before each write."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.expected: tuple[int, int] | None = None

    def remember(self) -> None:
        """Take the file's identity now (the store has just opened or created it)."""
        self.expected = self._current()

    def check(self) -> None:
        """Raise StoreUnavailable if the file at the path is gone or another file."""
        if self.expected is not None and self._current() != self.expected:
            raise StoreUnavailable(
                f"the database file {self.path} was deleted or replaced "
                "while serving; ingest is stopped until the right file is back "
                "or the collector is restarted on the file it should use"
            )

    def _current(self) -> tuple[int, int] | None:
        try:
            status = os.stat(self.path)
        except OSError:
            return None
        return status.st_dev, status.st_ino


def bound_wal(conn: sqlite3.Connection, path: str) -> None:
    """Truncate the WAL if it has grown past WAL_BOUND (after a commit, outside any tx)."""
    try:
        if os.path.getsize(path + "-wal") > WAL_BOUND:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except (OSError, sqlite3.OperationalError):
        pass  # busy or gone: the next look tries again; a missing file is caught elsewhere
