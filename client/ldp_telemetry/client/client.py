"""The SDK's entry point: :class:`Client` privatizes values and hands them to the uploader.

``record`` runs on the caller's thread and never touches the network: it looks up the
task's configuration among those already known (:mod:`ldp_telemetry.client.tasks`; an unknown task's
record is dropped and counted as ``task_unavailable`` while the uploader thread fetches
it), validates the value, applies the on-device limits (:mod:`ldp_telemetry.client.budget`),
privatizes the value with the OS CSPRNG, and queues only the encoded report. The raw
value is never queued, written, logged, put in an exception or sent. After construction
no method raises into the application: failures are logged once and counted in
:meth:`Client.stats`. Construction raises :class:`client.ConfigurationError` for bad
settings.

Public dimensions (a task that declares them, PROTOCOL.md §1.1): the client's
``dimensions`` and a record's own are mapped, on the caller's thread and before the report
is queued, onto the task's closed lists (a value not in its list, or missing, becomes
``other``; names the task does not declare are dropped), and travel in the clear beside the
privatized value. They are NOT protected by local differential privacy.

Embedding safety: the uploader is one daemon thread, restarted on demand in a forked
child; ``flush`` and ``close`` take one timeout; an atexit hook closes every open client
within its ``atexit_timeout`` (None turns it off); ``enabled=False`` or ``LDP_DISABLED=1``
makes ``record`` a no-op and deletes queued reports.
"""

from __future__ import annotations

import atexit
import os
import sqlite3
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ldp_telemetry.client.budget import canonical_value, device_key, load_secret, lookup_key
from ldp_telemetry.client.errors import ConfigurationError
from ldp_telemetry.client.log_once import LogOnce
from ldp_telemetry.client.privacy_ledger import charge_of
from ldp_telemetry.client.settings import (
    DEFAULT,
    Default,
    RetryPolicy,
    Settings,
    Timeouts,
)
from ldp_telemetry.client.sqlite_storage import SqliteStorage
from ldp_telemetry.client.stats import ClientStats, Counters
from ldp_telemetry.client.storage import Admission, MemoryStorage, Pending, Slot, Storage
from ldp_telemetry.client.tasks import TaskRegistry
from ldp_telemetry.client.transport import Transport
from ldp_telemetry.client.transport.http import HTTPTransport
from ldp_telemetry.client.uploader.scheduler import Uploader
from ldp_telemetry.shared.codec import Envelope, b64encode, encode_report_text, new_report_id
from ldp_telemetry.shared.errors import ValueOutOfDomain
from ldp_telemetry.shared.task import TaskConfig

_live: weakref.WeakSet[Client] = weakref.WeakSet()
_WHY = {
    Admission.CONFIG_CHANGED: "config_changed (the collector re-published it with another "
    "permanent layer; republished_epsilon_inf allows more)",
    Admission.EPSILON_EXHAUSTED: "epsilon_exhausted (max_epsilon_per_period is spent)",
    Admission.EPSILON_INF_EXHAUSTED: "epsilon_inf_exhausted (max_epsilon_inf is spent)",
}


class Client:
    """Record privatized telemetry for the tasks of one collector.

    ``endpoint`` is the collector's base URL (or ``LDP_ENDPOINT``); see
    :mod:`ldp_telemetry.client.settings` for every option and its environment variable. ``tasks``
    pins task configurations (they are then never fetched); ``task_ids`` names tasks whose
    configurations the uploader thread fetches at once (others are fetched the first time ``record``
    sees them, and that record is dropped); ``transport`` replaces the HTTP transport (e.g.
    :class:`client.InMemoryTransport` in tests); ``clock`` gives Unix time and exists for tests.
    ``dimensions`` gives this device's public dimensions once (``{"platform": "ios",
    "app_version": "5.2"}``; ``record`` may override them): they are sent in the clear, NOT
    protected by local differential privacy, coarsened to each task's declared lists.
    """

    def __init__(
        self,
        endpoint: str | None = None,
        *,
        upload_key: str | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        tasks: Iterable[TaskConfig] | None = None,
        task_ids: Iterable[str] | None = None,
        transport: Transport | None = None,
        dimensions: Mapping[str, str] | None = None,
        enabled: bool | None = None,
        batch_size: int | Default = DEFAULT,
        max_batch_bytes: int | Default = DEFAULT,
        flush_interval: float | Default = DEFAULT,
        max_queue: int | Default = DEFAULT,
        max_queue_bytes: int | Default = DEFAULT,
        reports_per_period: int | Default | None = DEFAULT,
        republished_epsilon_inf: float | Default | None = DEFAULT,
        max_epsilon_inf: float | Default | None = DEFAULT,
        max_epsilon_per_period: float | Default | None = DEFAULT,
        epsilon_period: int | Default = DEFAULT,
        atexit_timeout: float | Default | None = DEFAULT,
        timeouts: Timeouts | Default = DEFAULT,
        retry: RetryPolicy | Default = DEFAULT,
        clock: Callable[[], float] = time.time,
    ) -> None:
        arguments = {
            name: value
            for name, value in locals().items()
            if name
            not in ("self", "tasks", "task_ids", "transport", "dimensions", "clock", "__class__")
        }
        self._dimensions = _check_dimensions(dimensions)
        if transport is not None and not isinstance(transport, Transport):
            raise ConfigurationError("transport must have handle(request, *, timeout) and close()")
        self.settings = Settings.resolve(arguments, needs_http=transport is None)
        self._limits = self.settings.limits
        self._clock = clock
        self._counters, self._log = Counters(), LogOnce()
        self._secret = load_secret(_prepare(self.settings.data_dir))
        self._storage = self._open_storage()
        self._owns_transport = transport is None
        self._transport = transport or self._open_transport()
        self._registry = TaskRegistry(
            self._transport,
            pinned=tasks or (),
            timeout=self.settings.timeouts.config,
            log=self._log,
            counters=self._counters,
            cache_dir=self.settings.data_dir,
            wake=lambda: self._uploader.wake(),
        )
        self._uploader = Uploader(
            storage=self._storage,
            transport=self._transport,
            registry=self._registry,
            counters=self._counters,
            log=self._log,
            settings=self.settings,
        )
        self._enabled, self._closed = True, False
        if not self.settings.enabled:
            self.set_enabled(False)
        _live.add(self)
        if task_ids is not None and self._enabled:
            self._registry.want(_check_task_ids(task_ids))

    def _open_transport(self) -> Transport:
        settings = self.settings
        return HTTPTransport(
            settings.endpoint,
            upload_key=settings.upload_key,
            timeouts=settings.timeouts,
            retry=settings.retry,
        )

    def _open_storage(self) -> Storage:
        settings = self.settings
        if settings.data_dir is None:
            return MemoryStorage(max_queue=settings.max_queue, max_bytes=settings.max_queue_bytes)
        try:
            return SqliteStorage(
                settings.data_dir, max_queue=settings.max_queue, max_bytes=settings.max_queue_bytes
            )
        except (sqlite3.Error, OSError) as error:
            raise ConfigurationError(
                f"data_dir {settings.data_dir} cannot hold the queue: {error}"
            ) from None

    def record(self, task_id: str, value: Any, dimensions: Mapping[str, str] | None = None) -> bool:
        """Privatize ``value`` for task ``task_id`` and queue the report; True if queued.

        The value must fit the task's mechanism (a bool for yes/no tasks, one of the
        domain's values, or a str for sketches; see PROTOCOL.md). ``dimensions`` override
        the client's for this record (a task without dimensions ignores both); they are
        public, not privatized. Never raises.
        """
        if not self._enabled:
            return False
        if self._closed:
            self._counters.drop("closed")
            return False
        try:
            if dimensions is not None and not isinstance(dimensions, Mapping):
                raise ValueOutOfDomain("dimensions must be a mapping of names to values")
            return self._record(task_id, value, dimensions)
        except ValueOutOfDomain:
            return self._drop(
                "invalid_value",
                "ldp-telemetry: a value of the wrong type or "
                "outside the domain of task %r was dropped",
                task_id,
            )
        except sqlite3.Error as error:
            # SQLite's result code names the cause and carries no data: SQLITE_BUSY (another
            # transaction held the queue past record's wait), SQLITE_FULL, SQLITE_IOERR_...
            code = getattr(error, "sqlite_errorname", None)  # Python 3.11+
            return self._drop(
                "storage_error",
                "ldp-telemetry: the on-disk queue failed (%s)",
                f"{type(error).__name__} {code}" if code else type(error).__name__,
            )
        except Exception as error:  # never into the host app; the type only, no message
            return self._drop(
                "internal_error", "ldp-telemetry: record failed (%s)", type(error).__name__
            )

    def _record(self, task_id: str, value: Any, dimensions: Mapping[str, str] | None) -> bool:
        task = self._registry.get(task_id) if isinstance(task_id, str) else None
        if task is None:
            return self._drop(
                "task_unavailable",
                "ldp-telemetry: task %r is unavailable; records are dropped",
                task_id if isinstance(task_id, str) else "?",
            )
        now = self._clock()
        period = task.floor_time(now)
        canonical = canonical_value(task, value)
        slice_index = self._slice_of(task, dimensions)
        lookup = lookup_key(self._secret, task, period, canonical, slice_index)
        # Keyed by task id and period, not fingerprint: re-publishing a task with new
        # parameters gives no fresh budget (see ldp_telemetry.client.budget), nor a new permanent
        # response beyond what the app allows (see ldp_telemetry.client.privacy_ledger).
        slot = Slot(task.task_id, period, period + task.time_precision, lookup)
        charge = charge_of(task, self._secret, canonical, now, self._limits.epsilon_period)
        admission = self._storage.admit(
            slot,
            charge,
            self._limits,
            lambda: _privatize(task, self._secret, period, value, slice_index),
        )
        if admission in (Admission.NEW, Admission.REUSED):
            self._uploader.notify()
            return True
        return self._drop(
            admission.value,
            "ldp-telemetry: a record of task %r was dropped: %s",
            task_id,
            _WHY.get(admission, admission.value),
        )

    def _slice_of(self, task: TaskConfig, dimensions: Mapping[str, str] | None) -> int:
        """Return the slice of the task this record's dimensions fall in (0 without any):
        each declared name's value if in the task's list, else other."""
        if task.dimensions is None:
            return 0
        given = self._dimensions if dimensions is None else {**self._dimensions, **dimensions}
        return task.dimensions.slice_of(task.dimensions.coarsen(given))

    def _drop(self, reason: str, message: str, *args: object) -> bool:
        self._counters.drop(reason)
        self._log.report(reason, message, *args)
        return False

    def wait_for_tasks(self, task_ids: Iterable[str] | None = None, timeout: float = 10.0) -> bool:
        """Block until these task configurations are known; True if they are in time.

        The one call that waits for the network, at the caller's choice (scripts, tests,
        an app's start-up screen); ``record`` never does. None waits for every task named
        so far (``task_ids`` and records of unknown tasks).
        """
        if self._closed:
            return False
        try:
            return self._registry.wait(None if task_ids is None else list(task_ids), timeout)
        except Exception as error:
            self._log.report(
                "wait", "ldp-telemetry: waiting for tasks failed (%s)", type(error).__name__
            )
            return False

    def flush(self, timeout: float = 5.0) -> bool:
        """Send everything queued; return True if the queue emptied within ``timeout`` s."""
        if not self._enabled or self._closed:
            return not self._closed
        try:
            return self._uploader.flush(timeout)
        except Exception as error:
            self._log.report("flush", "ldp-telemetry: flush failed (%s)", type(error).__name__)
            return False

    def close(self, timeout: float = 5.0) -> bool:
        """Flush, then stop the uploader, all within ``timeout`` s; True if nothing was lost.

        Reports still queued are kept on disk with a data_dir (sent by the next client
        using it), else dropped and counted as ``closed``. Idempotent.
        """
        if self._closed:
            return True
        deadline = time.monotonic() + timeout
        flushed = self.flush(timeout)
        self._closed = True
        try:
            self._uploader.stop(0)
            if self._owns_transport:
                self._transport.close()  # interrupts a retry wait in the uploader thread
            self._uploader.stop(deadline - time.monotonic())
            lost = 0 if self.settings.data_dir is not None else self._storage.clear()
            self._counters.drop("closed", lost)
            self._storage.close()
            return flushed and not lost
        except Exception as error:
            self._log.report("close", "ldp-telemetry: close failed (%s)", type(error).__name__)
            return False

    def set_enabled(self, enabled: bool) -> None:
        """Turn recording on or off; turning it off deletes every queued report."""
        self._enabled = bool(enabled)
        if not self._enabled:
            try:
                self._counters.drop("disabled", self._storage.clear())
            except Exception as error:
                self._log.report(
                    "disable", "ldp-telemetry: clearing the queue failed (%s)", type(error).__name__
                )

    @property
    def enabled(self) -> bool:
        """Return whether ``record`` queues anything."""
        return self._enabled

    def stats(self) -> ClientStats:
        """Return the counters: sent, queued, retries, failed batches, drops by reason."""
        try:
            queued = 0 if self._closed else self._storage.count()
            ledger = {} if self._closed else self._storage.ledger()
        except Exception:
            queued, ledger = 0, {}
        return self._counters.snapshot(queued, ledger)

    def _after_fork_in_child(self) -> None:
        for part in (self._counters, self._log, self._registry, self._storage, self._uploader):
            part.after_fork()

    def _at_exit(self) -> None:
        if self.settings.atexit_timeout is not None:
            self.close(self.settings.atexit_timeout)


def _privatize(
    task: TaskConfig, secret: bytes, period: int, value: Any, slice_index: int = 0
) -> Pending:
    """Return the encoded report of ``value`` (its slice's ``dims`` in the clear),
    privatized with the OS CSPRNG."""
    mechanism = task.mechanism_object.for_device(device_key(secret, task))
    payload = mechanism.privatize(value)
    envelope = Envelope(new_report_id(), task.fingerprint, period, payload, slice_index)
    return Pending(task.task_id, b64encode(envelope.report_id), encode_report_text(task, envelope))


def _check_dimensions(dimensions: Any) -> dict[str, str]:
    """Return the client's dimensions as a dict, or raise ConfigurationError."""
    if dimensions is None:
        return {}
    if not isinstance(dimensions, Mapping) or not all(isinstance(k, str) for k in dimensions):
        raise ConfigurationError(
            'dimensions must map names to values, e.g. {"platform": "ios", "app_version": "5.2"}'
        )
    return dict(dimensions)


def _check_task_ids(task_ids: Iterable[str]) -> list[str]:
    if isinstance(task_ids, str):
        raise ConfigurationError("task_ids must be a list of task ids, not one string")
    return list(task_ids)


def _prepare(data_dir: Path | None) -> Path | None:
    if data_dir is not None:
        try:
            data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as error:
            raise ConfigurationError(f"data_dir {data_dir} cannot be created: {error}") from None
    return data_dir


def _after_fork_in_child() -> None:
    for client in list(_live):
        client._after_fork_in_child()


def _close_all_at_exit() -> None:
    for client in list(_live):
        client._at_exit()


os.register_at_fork(after_in_child=_after_fork_in_child)
atexit.register(_close_all_at_exit)
