"""Counters of what the client did with each report, safe to update from any thread.

Drop reasons (``ClientStats.dropped``):

- ``invalid_value``    the value does not fit the task (wrong type, not in its domain)
- ``task_unavailable`` the task's configuration could not be obtained
- ``budget_exhausted`` the task's reports-per-period limit was already reached
- ``config_changed``   the collector re-published the task with another permanent layer
                       than the device answered under, and the app's ``republished_epsilon_inf``
                       does not allow it (:mod:`ldp_telemetry.client.privacy_ledger`)
- ``epsilon_inf_exhausted`` a new permanent response would pass ``max_epsilon_inf``
- ``epsilon_exhausted`` the report would pass ``max_epsilon_per_period``
- ``queue_full``       the queue (in memory or on disk) held ``max_queue`` reports or
                       ``max_queue_bytes`` bytes: the new one is refused
- ``batch_rejected``   the server refused a whole batch with a 4xx answer (not retried)
- ``closed``           recorded after close(), or still queued in memory when close() ended
- ``disabled``         queued when the client was disabled (the queue is cleared)
- ``storage_error``    the on-disk state could not be read or written
- ``internal_error``   anything unexpected (a bug)

``rejected`` counts the server's per-report reasons (``report_expired``, ...);
``report_replayed`` is not among them: it means the report was already delivered.

``refused_tasks`` counts task configurations the client refused, by reason:
``derived_mismatch`` (the integers the task publishes are not the ones its parameters give
here, PROTOCOL.md §1), ``invalid`` (anything else: a fingerprint it cannot reproduce, a
protocol version it does not speak, bad parameters).
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ClientStats:
    """A snapshot of a client's counters."""

    sent: int = 0
    queued: int = 0
    retries: int = 0
    failed_batches: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    rejected: dict[str, int] = field(default_factory=dict)
    refused_tasks: dict[str, int] = field(default_factory=dict)
    # The privacy ledger, per task id: permanent responses drawn (values, or LOLOHA's hashed
    # buckets) and the ε∞ they spent, for the device's life (what max_epsilon_inf caps).
    permanent_responses: dict[str, int] = field(default_factory=dict)
    epsilon_inf: dict[str, float] = field(default_factory=dict)

    @property
    def dropped_total(self) -> int:
        """Return how many reports were dropped for any reason."""
        return sum(self.dropped.values())


class Counters:
    """The mutable, locked counters behind :class:`ClientStats`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sent = self._retries = self._failed_batches = 0
        self._dropped: Counter[str] = Counter()
        self._rejected: Counter[str] = Counter()
        self._refused_tasks: Counter[str] = Counter()

    def after_fork(self) -> None:
        """Replace the lock (another thread may have held it at fork time)."""
        self._lock = threading.Lock()

    def drop(self, reason: str, count: int = 1) -> None:
        """Count ``count`` reports dropped for ``reason``."""
        if count:
            with self._lock:
                self._dropped[reason] += count

    def delivered(self, count: int) -> None:
        """Count reports the server accepted (or had already accepted)."""
        with self._lock:
            self._sent += count

    def reject(self, reason: str) -> None:
        """Count one report the server refused, by its reason."""
        with self._lock:
            self._rejected[reason] += 1

    def refuse_task(self, reason: str) -> None:
        """Count one task configuration refused, by its reason."""
        with self._lock:
            self._refused_tasks[reason] += 1

    def retried(self, count: int) -> None:
        """Count retries a transport made."""
        if count:
            with self._lock:
                self._retries += count

    def batch_failed(self) -> None:
        """Count a batch whose upload failed (it stays queued or is dropped)."""
        with self._lock:
            self._failed_batches += 1

    def snapshot(
        self, queued: int, ledger: dict[str, tuple[int, float]] | None = None
    ) -> ClientStats:
        """Return the current counters (and the ledger's totals, per task id)."""
        ledger = ledger or {}
        with self._lock:
            return ClientStats(
                sent=self._sent,
                queued=queued,
                retries=self._retries,
                failed_batches=self._failed_batches,
                dropped=dict(self._dropped),
                rejected=dict(self._rejected),
                refused_tasks=dict(self._refused_tasks),
                permanent_responses={task: count for task, (count, _) in ledger.items()},
                epsilon_inf={task: spent for task, (_, spent) in ledger.items()},
            )
