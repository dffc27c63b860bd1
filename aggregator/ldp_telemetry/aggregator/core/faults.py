"""Storage faults a client may retry, and how SQLite reports them.

Anything of the collector that commits to disk raises these: the store
(:mod:`ldp_telemetry.aggregator.store`; they are part of its interface) and the shuffler's
spool (ldp_telemetry.shuffler.spool). :mod:`ldp_telemetry.aggregator.core.problems` answers
them, 503 and 507 with Retry-After. A leaf module: it imports nothing of the collector, so
the store, below the rest of the core, may import it (docs/architecture.md).
"""

from __future__ import annotations

import sqlite3


class StoreUnavailable(Exception):
    """The store cannot answer now (e.g. its write lock stayed busy); retry later."""


class StoreFull(StoreUnavailable):
    """The store's disk is full: nothing was written; retry once space is freed."""


_FULL = {"database or disk is full"}
_UNAVAILABLE = (
    "database is locked",
    "readonly database",
    "disk i/o error",
    "unable to open database file",
    "database disk image is malformed",
    "attempt to write a readonly database",
)


def classify_sqlite(error: sqlite3.Error) -> StoreUnavailable | None:
    """Return the retryable store error an SQLite failure means, or None (a bug).

    A full disk (SQLITE_FULL) is :class:`StoreFull` (507); a read-only or failing file
    (SQLITE_READONLY, SQLITE_IOERR, SQLITE_CANTOPEN) or a lock that stayed busy is
    :class:`StoreUnavailable` (503). Other errors (bugs) are not retryable.
    """
    if isinstance(error, sqlite3.IntegrityError | sqlite3.ProgrammingError):
        return None
    message = str(error).lower()
    if any(text in message for text in _FULL):
        return StoreFull("the disk holding the database is full")
    if any(text in message for text in _UNAVAILABLE):
        return StoreUnavailable(f"the database cannot be written now: {error}")
    return None
