"""Where privatized reports wait for upload, next to the budget ledger that admitted them.

A :class:`Storage` holds two things that must change together: the ledger of the
reports made per task id and period (with each one's memo key, see :mod:`client.budget`)
and the queue of encoded reports not yet delivered. :meth:`Storage.admit` checks and
updates both in one step, so the budget holds even with several threads (and, on disk,
several processes). Only encoded, privatized reports are ever stored.

The rule is written once, :func:`admit_to`, over a small :class:`Ledger` view that each
storage provides: :class:`MemoryStorage` (in memory) and
:class:`client.sqlite_storage.SqliteStorage` (on disk, shared by processes). Both obey
the same queue bound: when the queue holds ``max_queue`` reports or ``max_bytes`` bytes,
a new report is refused (``queue_full``, ``record`` returns False) and nothing queued is
deleted — every queued report was admitted against the device's budget and cannot be
made again in its period.
"""

from __future__ import annotations

import enum
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Slot:
    """Where a record falls: its task id, its period ``[start, end)`` and its memo key.

    The ledger is keyed by task id, never by the task's fingerprint: a task re-published
    with new parameters shares the budget of the periods it overlaps (see
    :mod:`client.budget`). The memo key binds the fingerprint, so a report is only ever
    reused under the configuration it was made for.
    """

    task_id: str
    start: int
    end: int
    lookup: bytes


@dataclass(frozen=True)
class Pending:
    """One encoded report waiting for upload: its task, id (base64url) and JSON text."""

    task_id: str
    report_id: str
    report: str

    @property
    def size(self) -> int:
        """Return the bytes it takes on the wire."""
        return len(self.report)


class Admission(enum.Enum):
    """What :meth:`Storage.admit` did with a record."""

    NEW = "new"  # privatized now and queued
    REUSED = "reused"  # the period's earlier report, queued again
    EXHAUSTED = "budget_exhausted"  # the period's limit is reached: dropped
    FULL = "queue_full"  # the queue is full: dropped


class Ledger(Protocol):
    """What the budget rule reads and writes, inside one storage's lock or transaction."""

    def memo(self, slot: Slot) -> Pending | None:
        """Return the report made for this slot's value and period, if any."""
        ...

    def spent(self, slot: Slot) -> int:
        """Return the task's reports in periods overlapping the slot's."""
        ...

    def has_room(self, size: int) -> bool:
        """Return whether a report of ``size`` bytes fits in the queue."""
        ...

    def enqueue(self, pending: Pending) -> bool:
        """Queue a report (a no-op if it is queued); False if it does not fit."""
        ...

    def remember(self, slot: Slot, pending: Pending) -> None:
        """Record a new report in the ledger (and forget periods that have ended)."""
        ...


def admit_to(ledger: Ledger, slot: Slot, limit: int, make: Callable[[], Pending]) -> Admission:
    """The device budget rule, for every storage (see :mod:`client.budget`).

    The same value in the same period resends the report already made (same id, same
    noise); otherwise a new report is privatized only while the task has fewer than
    ``limit`` reports in the periods overlapping this one and the queue has room.
    """
    earlier = ledger.memo(slot)
    if earlier is not None:
        return Admission.REUSED if ledger.enqueue(earlier) else Admission.FULL
    if ledger.spent(slot) >= limit:
        return Admission.EXHAUSTED
    if not ledger.has_room(0):
        return Admission.FULL  # before privatizing: no noise is drawn for nothing
    pending = make()
    if not ledger.enqueue(pending):
        return Admission.FULL
    ledger.remember(slot, pending)
    return Admission.NEW


class Storage(Protocol):
    """The ledger and the queue; every method is thread-safe."""

    def admit(self, slot: Slot, limit: int, make: Callable[[], Pending]) -> Admission:
        """Queue the slot's memoized report, or a new one from ``make()`` if allowed.

        Allowed: fewer than ``limit`` reports of the task in periods overlapping the slot's.
        """
        ...

    def peek(self, limit: int, max_bytes: int) -> list[Pending]:
        """Return the oldest queued reports of one task: ``limit`` at most, see :func:`take`."""
        ...

    def remove(self, report_ids: Iterable[str]) -> None:
        """Forget delivered (or definitively refused) reports."""
        ...

    def count(self) -> int:
        """Return how many reports are queued."""
        ...

    def clear(self) -> int:
        """Drop every queued report (the ledger stays); return how many there were."""
        ...

    def maintain(self) -> None:
        """Do periodic upkeep; called from the uploader thread, never from ``record``."""
        ...

    def after_fork(self) -> None:
        """Make the storage usable in a forked child."""
        ...

    def close(self) -> None:
        """Release resources; idempotent."""
        ...


class MemoryStorage:
    """The ledger and a bounded queue in memory."""

    def __init__(self, *, max_queue: int, max_bytes: int) -> None:
        self._max_queue, self._max_bytes = max_queue, max_bytes
        self._lock = threading.Lock()
        self._queue: OrderedDict[str, Pending] = OrderedDict()
        self._bytes = 0
        # task id -> period (start, end) -> memo key -> report
        self._ledger: dict[str, dict[tuple[int, int], dict[bytes, Pending]]] = {}

    def admit(self, slot: Slot, limit: int, make: Callable[[], Pending]) -> Admission:
        """Queue the slot's memoized report, or a new one from ``make()`` if allowed."""
        with self._lock:
            return admit_to(self, slot, limit, make)

    # -- the Ledger view (called with the lock held) -----------------------------------------

    def memo(self, slot: Slot) -> Pending | None:
        """Return the report made for this slot's value and period, if any."""
        return self._ledger.get(slot.task_id, {}).get((slot.start, slot.end), {}).get(slot.lookup)

    def spent(self, slot: Slot) -> int:
        """Return the task's reports in periods overlapping the slot's."""
        return sum(
            len(memo)
            for (start, end), memo in self._ledger.get(slot.task_id, {}).items()
            if start < slot.end and end > slot.start
        )

    def remember(self, slot: Slot, pending: Pending) -> None:
        """Record a new report; forget the task's periods that ended before this one."""
        periods = self._ledger.setdefault(slot.task_id, {})
        for ended in [key for key in periods if key[1] <= slot.start]:
            del periods[ended]  # only periods overlapping the present matter
        periods.setdefault((slot.start, slot.end), {})[slot.lookup] = pending

    def peek(self, limit: int, max_bytes: int) -> list[Pending]:
        """Return the oldest queued reports of one task: ``limit`` at most, see :func:`take`."""
        with self._lock:
            if not self._queue:
                return []
            task_id = next(iter(self._queue.values())).task_id
            return take((p for p in self._queue.values() if p.task_id == task_id), limit, max_bytes)

    def remove(self, report_ids: Iterable[str]) -> None:
        """Forget delivered (or definitively refused) reports."""
        with self._lock:
            for report_id in report_ids:
                pending = self._queue.pop(report_id, None)
                if pending is not None:
                    self._bytes -= pending.size

    def count(self) -> int:
        """Return how many reports are queued."""
        return len(self._queue)

    def clear(self) -> int:
        """Drop every queued report (the ledger stays); return how many there were."""
        with self._lock:
            count = len(self._queue)
            self._queue.clear()
            self._bytes = 0
            return count

    def maintain(self) -> None:
        """Do nothing: memory needs no upkeep."""

    def after_fork(self) -> None:
        """Start the child with an empty queue: the parent delivers what it queued."""
        self._lock = threading.Lock()
        self._queue.clear()
        self._bytes = 0

    def close(self) -> None:
        """Do nothing: memory needs no release."""

    def has_room(self, size: int) -> bool:
        """Return whether a report of ``size`` bytes fits in the queue."""
        return len(self._queue) < self._max_queue and self._bytes + size <= self._max_bytes

    def enqueue(self, pending: Pending) -> bool:
        """Queue a report (a no-op if it is queued); False if it does not fit."""
        if pending.report_id in self._queue:
            return True  # already waiting: the server would count it once anyway
        if not self.has_room(pending.size):
            return False
        self._queue[pending.report_id] = pending
        self._bytes += pending.size
        return True


def take(reports: Iterable[Pending], limit: int, max_bytes: int) -> list[Pending]:
    """Return the first reports, at most ``limit``, whose JSON fits in ``max_bytes``.

    Each report counts its size plus one byte (the comma between reports); the first
    report is always returned, however large, so an oversized one can still be tried.
    """
    batch: list[Pending] = []
    total = 0
    for pending in reports:
        total += pending.size + 1
        if len(batch) == limit or (batch and total > max_bytes):
            break
        batch.append(pending)
    return batch
