"""PostgreSQL's failures as the store's retryable errors (503 / 507 with Retry-After)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg import errors

from ldp_telemetry.aggregator.store.interface import StoreFull, StoreUnavailable

_BUSY = (errors.DeadlockDetected, errors.SerializationFailure, errors.LockNotAvailable)


def classify(error: BaseException) -> StoreUnavailable | None:
    """Return the retryable store error a PostgreSQL failure means, or None (a bug)."""
    if isinstance(error, errors.DiskFull):
        return StoreFull("the disk holding the PostgreSQL database is full")
    if isinstance(error, _BUSY):
        # "locked" makes the answer's Retry-After short: a retry will likely pass.
        return StoreUnavailable(f"the database is locked (a conflicting transaction): {error}")
    if isinstance(error, psycopg.OperationalError | psycopg.InterfaceError):
        # Connection refused or lost, server shutting down or starting, pool exhausted.
        return StoreUnavailable(f"PostgreSQL cannot be reached now: {error}")
    if isinstance(error, errors.ReadOnlySqlTransaction):
        return StoreUnavailable(f"PostgreSQL accepts no writes now (a standby?): {error}")
    return None


@contextmanager
def faults() -> Iterator[None]:
    """Raise PostgreSQL's retryable failures inside the block as store errors."""
    try:
        yield
    except psycopg.Error as error:
        fault = classify(error)
        if fault is None:
            raise
        raise fault from error
