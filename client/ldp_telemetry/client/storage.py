"""The upload queue, beside the budget and the privacy ledger that admitted its reports.

A :class:`Storage` holds what must change together: the budget (reports made per task id and
period, each with its memo key, :mod:`ldp_telemetry.client.budget`), the privacy ledger
(permanent-layer configurations, permanent responses, ε spent,
:mod:`ldp_telemetry.client.privacy_ledger`) and the queue of encoded reports not yet delivered.
:meth:`Storage.admit` checks and updates them in one step (:func:`admit_to`, written once over
the :class:`DeviceState` view each storage provides), so the limits hold with several threads
and, on disk (:class:`ldp_telemetry.client.sqlite_storage.SqliteStorage`), several processes.
The uploader claims a batch (:meth:`Storage.claim`) and removes or releases it; meanwhile (or
until the lease ends) no other uploader gets it. A full queue (``max_queue`` reports or
``max_bytes`` bytes) refuses a new report (``queue_full``), deleting nothing queued (each was
admitted against the budget). Only encoded, privatized reports and HMAC keys are stored.
"""

from __future__ import annotations

import enum
import itertools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from ldp_telemetry.client.privacy_ledger import Charge, Limits, Permanent, within


@dataclass(frozen=True)
class Slot:
    """Where a record falls: its task id, its period ``[start, end)`` and its memo key.

    The budget is keyed by task id, never by the task's fingerprint: a task re-published with new
    parameters shares the budget of the periods it overlaps (see
    :mod:`ldp_telemetry.client.budget`). The memo key binds the fingerprint, so a report is only
    ever reused under the configuration it was made for.
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
        """Return the bytes it takes on the wire (UTF-8: a dimension value may be non-ASCII)."""
        return len(self.report.encode("utf-8"))


class Admission(enum.Enum):
    """What :meth:`Storage.admit` did with a record."""

    NEW = "new"  # privatized now and queued
    REUSED = "reused"  # the period's earlier report, queued again
    EXHAUSTED = "budget_exhausted"  # the period's limit is reached: dropped
    CONFIG_CHANGED = "config_changed"  # a permanent layer the app does not allow: dropped
    EPSILON_EXHAUSTED = "epsilon_exhausted"  # the device's ε per period is spent: dropped
    EPSILON_INF_EXHAUSTED = "epsilon_inf_exhausted"  # the device's lifetime ε∞: dropped
    FULL = "queue_full"  # the queue is full: dropped


class DeviceState(Protocol):
    """What the admission rule reads and writes (the budget, the privacy ledger, the queue),
    inside one storage's lock or transaction."""

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
        """Record a new report in the budget (and forget periods that have ended)."""
        ...

    def configurations(self, task_id: str) -> list[tuple[str, float]]:
        """Return the task's adopted permanent configurations and their ε∞, oldest first."""
        ...

    def drawn(self, task_id: str, permanent: Permanent) -> bool:
        """Return whether a PRR of this value was drawn under this configuration."""
        ...

    def lifetime_epsilon_inf(self) -> float:
        """Return the ε∞ of every PRR drawn, across tasks."""
        ...

    def period_epsilon(self, period: int) -> float:
        """Return the ε of the new reports made in the device period starting at ``period``."""
        ...

    def adopt(self, task_id: str, permanent: Permanent) -> None:
        """Add a permanent configuration to the task's adopted ones."""
        ...

    def draw(self, task_id: str, permanent: Permanent) -> None:
        """Record that a PRR of this value was drawn under this configuration."""
        ...

    def spend(self, period: int, epsilon: float) -> None:
        """Add ε to a device period (and forget the periods before it)."""
        ...


def admit_to(
    state: DeviceState, slot: Slot, charge: Charge, limits: Limits, make: Callable[[], Pending]
) -> Admission:
    """Apply the device's privacy rule, in every storage (ldp_telemetry.client.budget,
    ldp_telemetry.client.privacy_ledger).

    The same value in the same period resends the report already made (same id, same
    noise). Otherwise, in this order: the task's permanent configuration must be adopted
    or adoptable (``config_changed``); the task must have fewer than
    ``reports_per_period`` reports in the periods overlapping this one; the device
    period's ε and, for a new PRR, the device's lifetime ε∞ must stay within their caps;
    the queue must have room. Only then is the value privatized, and everything it
    spends is recorded with the report.
    """
    earlier = state.memo(slot)
    if earlier is not None:
        return Admission.REUSED if state.enqueue(earlier) else Admission.FULL
    permanent = charge.permanent
    adopt = _adopts(state, slot.task_id, permanent, limits)
    if adopt is None:
        return Admission.CONFIG_CHANGED
    if state.spent(slot) >= limits.reports_per_period:
        return Admission.EXHAUSTED
    if not within(
        state.period_epsilon(charge.period), charge.epsilon, limits.max_epsilon_per_period
    ):
        return Admission.EPSILON_EXHAUSTED
    # The PRR this record would draw: none without a permanent layer or if drawn already.
    new_prr = None if permanent is None or state.drawn(slot.task_id, permanent) else permanent
    if new_prr is not None and not within(
        state.lifetime_epsilon_inf(), new_prr.epsilon_inf, limits.max_epsilon_inf
    ):
        return Admission.EPSILON_INF_EXHAUSTED
    if not state.has_room(0):
        return Admission.FULL  # before privatizing: no noise is drawn for nothing
    pending = make()
    if not state.enqueue(pending):
        return Admission.FULL
    state.remember(slot, pending)
    if adopt and permanent is not None:
        state.adopt(slot.task_id, permanent)
    if new_prr is not None:
        state.draw(slot.task_id, new_prr)
    state.spend(charge.period, charge.epsilon)
    return Admission.NEW


def _adopts(
    state: DeviceState, task_id: str, permanent: Permanent | None, limits: Limits
) -> bool | None:
    """Return whether a record adopts its configuration: True, False (known) or None (refused).

    The decision depends on the task's configurations only, never on the value, so a
    refusal tells the collector nothing about what the device holds.
    """
    adopted = state.configurations(task_id)
    if permanent is None:
        return None if adopted else False  # no permanent layer would mean no lifetime bound
    if not adopted:
        return True
    if any(configuration == permanent.configuration for configuration, _ in adopted):
        return False
    later = sum(epsilon_inf for _, epsilon_inf in adopted[1:])
    if within(later, permanent.epsilon_inf, limits.republished_epsilon_inf):
        return True
    return None


class Storage(Protocol):
    """The budget, the privacy ledger and the queue; every method is thread-safe."""

    def admit(
        self, slot: Slot, charge: Charge, limits: Limits, make: Callable[[], Pending]
    ) -> Admission:
        """Queue the slot's memoized report, or a new one from ``make()`` if allowed.

        Allowed: see :func:`admit_to`.
        """
        ...

    def claim(self, limit: int, max_bytes: int, lease: float) -> list[Pending]:
        """Claim the oldest unclaimed reports of one task (``limit`` at most, see :func:`take`)
        for ``lease`` seconds: until removed, released or past its lease, a claimed report is
        returned by no other claim (on disk: of any process)."""
        ...

    def release(self, report_ids: Iterable[str]) -> None:
        """Give back claimed reports that were not delivered: the next claim may take them."""
        ...

    def remove(self, report_ids: Iterable[str]) -> None:
        """Forget delivered (or definitively refused) reports."""
        ...

    def count(self) -> int:
        """Return how many reports are queued."""
        ...

    def ledger(self) -> dict[str, tuple[int, float]]:
        """Return per task id the permanent responses drawn and their ε∞ summed."""
        ...

    def clear(self) -> int:
        """Drop every queued report (the budget and privacy ledger stay); return how many."""
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
    """The budget, the privacy ledger and a bounded queue in memory."""

    def __init__(self, *, max_queue: int, max_bytes: int) -> None:
        self._max_queue, self._max_bytes = max_queue, max_bytes
        self._lock = threading.Lock()
        self._queue: OrderedDict[str, Pending] = OrderedDict()
        self._claims: dict[str, float] = {}  # report id -> monotonic end of its claim
        self._bytes = 0
        # task id -> period (start, end) -> memo key -> report
        self._budget: dict[str, dict[tuple[int, int], dict[bytes, Pending]]] = {}
        self._configurations: dict[str, list[tuple[str, float]]] = {}
        # (task id, configuration, value key) -> the ε∞ its PRR spent
        self._drawn: dict[tuple[str, str, bytes], float] = {}
        self._lifetime = 0.0
        self._periods: dict[int, float] = {}  # device period start -> ε spent in it

    def admit(
        self, slot: Slot, charge: Charge, limits: Limits, make: Callable[[], Pending]
    ) -> Admission:
        """Queue the slot's memoized report, or a new one from ``make()`` if allowed."""
        with self._lock:
            return admit_to(self, slot, charge, limits, make)

    # -- the DeviceState view (called with the lock held) ------------------------------------

    def memo(self, slot: Slot) -> Pending | None:
        return self._budget.get(slot.task_id, {}).get((slot.start, slot.end), {}).get(slot.lookup)

    def spent(self, slot: Slot) -> int:
        return sum(
            len(memo)
            for (start, end), memo in self._budget.get(slot.task_id, {}).items()
            if start < slot.end and end > slot.start
        )

    def remember(self, slot: Slot, pending: Pending) -> None:
        periods = self._budget.setdefault(slot.task_id, {})
        for ended in [key for key in periods if key[1] <= slot.start]:
            del periods[ended]  # only periods overlapping the present matter
        periods.setdefault((slot.start, slot.end), {})[slot.lookup] = pending

    def configurations(self, task_id: str) -> list[tuple[str, float]]:
        return list(self._configurations.get(task_id, []))

    def drawn(self, task_id: str, permanent: Permanent) -> bool:
        return (task_id, permanent.configuration, permanent.value_key) in self._drawn

    def lifetime_epsilon_inf(self) -> float:
        return self._lifetime

    def period_epsilon(self, period: int) -> float:
        return self._periods.get(period, 0.0)

    def ledger(self) -> dict[str, tuple[int, float]]:
        """Return per task id the permanent responses drawn and their ε∞ summed."""
        totals: dict[str, tuple[int, float]] = {}
        with self._lock:
            for (task_id, _, _), epsilon_inf in self._drawn.items():
                count, spent = totals.get(task_id, (0, 0.0))
                totals[task_id] = (count + 1, spent + epsilon_inf)
        return totals

    def adopt(self, task_id: str, permanent: Permanent) -> None:
        adopted = self._configurations.setdefault(task_id, [])
        adopted.append((permanent.configuration, permanent.epsilon_inf))

    def draw(self, task_id: str, permanent: Permanent) -> None:
        self._drawn[task_id, permanent.configuration, permanent.value_key] = permanent.epsilon_inf
        self._lifetime += permanent.epsilon_inf

    def spend(self, period: int, epsilon: float) -> None:
        for ended in [start for start in self._periods if start < period]:
            del self._periods[ended]
        self._periods[period] = self.period_epsilon(period) + epsilon

    def claim(self, limit: int, max_bytes: int, lease: float) -> list[Pending]:
        """Claim the oldest unclaimed reports of one task for ``lease`` seconds."""
        with self._lock:
            now = time.monotonic()
            free = (p for p in self._queue.values() if self._claims.get(p.report_id, 0.0) <= now)
            first = next(free, None)
            if first is None:
                return []
            same_task = (p for p in free if p.task_id == first.task_id)
            batch = take(itertools.chain([first], same_task), limit, max_bytes)
            for pending in batch:
                self._claims[pending.report_id] = now + lease
            return batch

    def release(self, report_ids: Iterable[str]) -> None:
        """Give back claimed reports that were not delivered: the next claim may take them."""
        with self._lock:
            for report_id in report_ids:
                self._claims.pop(report_id, None)

    def remove(self, report_ids: Iterable[str]) -> None:
        """Forget delivered (or definitively refused) reports."""
        with self._lock:
            for report_id in report_ids:
                self._claims.pop(report_id, None)
                pending = self._queue.pop(report_id, None)
                if pending is not None:
                    self._bytes -= pending.size

    def count(self) -> int:
        """Return how many reports are queued."""
        return len(self._queue)

    def clear(self) -> int:
        """Drop every queued report (the budget and privacy ledger stay); return how many."""
        with self._lock:
            count = len(self._queue)
            self._queue.clear()
            self._claims.clear()
            self._bytes = 0
            return count

    def maintain(self) -> None:
        """Do nothing: memory needs no upkeep."""

    def after_fork(self) -> None:
        """Start the child with an empty queue: the parent delivers what it queued."""
        self._lock = threading.Lock()
        self.clear()

    def close(self) -> None:
        """Do nothing: memory needs no release."""

    def has_room(self, size: int) -> bool:
        return len(self._queue) < self._max_queue and self._bytes + size <= self._max_bytes

    def enqueue(self, pending: Pending) -> bool:
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
