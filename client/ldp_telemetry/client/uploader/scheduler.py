"""The scheduler: one daemon thread that decides when to send (the exporter sends).

The thread wakes when ``batch_size`` reports are queued, when ``flush_interval`` has passed, when a
task configuration is wanted, or when ``flush``/``close`` ask; each time it first does the storage's
upkeep (the on-disk queue's checkpoint, kept off the caller's thread), fetches wanted or stale task
configurations (:mod:`ldp_telemetry.client.tasks`), then has the exporter
(:mod:`ldp_telemetry.client.uploader.exporter`) send batch after batch. When a batch must be sent
again the thread waits longer after each failure (doubling from ``flush_interval``, up to
``MAX_BACKOFF``, jittered), and at least the answer's Retry-After (also capped at ``MAX_BACKOFF``);
until then only a flush makes it send. Fork handling lives here: a forked child forgets the parent's
thread and starts its own on demand.
"""

from __future__ import annotations

import os
import random
import threading
import time

from ldp_telemetry.client.log_once import LogOnce
from ldp_telemetry.client.settings import Settings
from ldp_telemetry.client.stats import Counters
from ldp_telemetry.client.storage import Storage
from ldp_telemetry.client.tasks import TaskRegistry
from ldp_telemetry.client.transport import Transport
from ldp_telemetry.client.uploader.exporter import Exporter, Outcome

MAX_BACKOFF = 600.0
# While a flush waits on reports another process holds (its claims, see Storage.claim), the
# thread looks again at most this often: that process may release them, or its claims lapse.
LOOK_AGAIN = 0.25


class Uploader:
    """The scheduler: decide when the exporter sends what ``storage`` holds."""

    def __init__(
        self,
        *,
        storage: Storage,
        transport: Transport,
        registry: TaskRegistry,
        counters: Counters,
        log: LogOnce,
        settings: Settings,
    ) -> None:
        self._storage, self._registry = storage, registry
        self._counters, self._log, self._settings = counters, log, settings
        self._exporter = Exporter(
            storage=storage,
            transport=transport,
            registry=registry,
            counters=counters,
            log=log,
            settings=settings,
        )
        self._reset()

    def _reset(self) -> None:
        self._pid = os.getpid()
        self._thread: threading.Thread | None = None
        self._wake = threading.Event()
        self._flush_wanted = threading.Event()
        self._stopping = threading.Event()
        self._progress = threading.Condition()
        self._starting = threading.Lock()
        self._since_wake = 0  # reports queued since the thread last woke
        self._failures = 0  # consecutive failed attempts, sets the backoff
        self._failed_ever = 0  # every failed attempt, lets flush() see a new failure
        self._resume_at = 0.0  # monotonic time before which only a flush sends (backoff)
        self._passes = 0  # the thread's passes ended so far (a flush sees when it went idle)
        self._begun = 0  # ... and begun: a flush waits for one begun after it was called

    def after_fork(self) -> None:
        """Forget the parent's thread and locks; the child starts its own thread on demand."""
        self._reset()

    def wake(self) -> None:
        """Have the thread look at its work now (e.g. a task configuration is wanted)."""
        self._ensure_started()
        self._wake.set()

    def notify(self) -> None:
        """Count one queued report; wake the thread when a batch is full."""
        self._ensure_started()
        self._since_wake += 1  # a racy count is fine: it only decides when to wake early
        if self._since_wake >= self._settings.batch_size:
            self._wake.set()

    def flush(self, timeout: float) -> bool:
        """Send everything queued; return True if the queue emptied within ``timeout``.

        On disk the queue may be shared: it has emptied when every process's reports are sent.
        Once it has, the flush still waits (within ``timeout``) for a pass of the thread begun
        after the call, so the tasks due a refresh were fetched: a pass already under way may
        have sent the reports with what it fetched before.
        """
        deadline = time.monotonic() + timeout
        self._ensure_started()
        failed_before, begun = self._failed_ever, self._begun
        self._flush_wanted.set()
        self._wake.set()
        look_again, passes = time.monotonic() + LOOK_AGAIN, self._passes
        with self._progress:
            if not self._storage.count():
                return True
            while True:
                queued, now = self._storage.count(), time.monotonic()
                over = now >= deadline or self._stopping.is_set()
                if not queued and (
                    over or self._passes > begun or self._failed_ever != failed_before
                ):
                    return True  # everything is sent (a late or failed refresh changes nothing)
                if queued and (over or self._failed_ever != failed_before):
                    return False
                if self._passes != passes and now >= look_again:
                    # The thread went idle with reports left: another process holds them; its
                    # claims may be released or lapse, so look again.
                    look_again, passes = now + LOOK_AGAIN, self._passes
                    self._flush_wanted.set()
                    self._wake.set()
                self._progress.wait(min(deadline - now, 0.05))

    def stop(self, timeout: float) -> bool:
        """Stop the thread; return True if it ended within ``timeout``."""
        self._stopping.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(max(0.0, timeout))
            return not thread.is_alive()
        return True

    def _ensure_started(self) -> None:
        if os.getpid() != self._pid:
            self._reset()
        if self._thread is not None and self._thread.is_alive():
            return
        with self._starting:  # two first records at once must not start two threads
            if (
                self._thread is None or not self._thread.is_alive()
            ) and not self._stopping.is_set():
                self._thread = threading.Thread(
                    target=self._run, daemon=True, name="ldp-telemetry-uploader"
                )
                self._thread.start()

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._wake.wait(self._wait_time())
            self._wake.clear()
            self._since_wake = 0
            with self._progress:
                self._begun += 1
            if self._stopping.is_set():
                break
            try:
                self._storage.maintain()  # disk upkeep here, never on the caller's thread
                if self._flush_wanted.is_set() or time.monotonic() >= self._resume_at:
                    self._flush_wanted.clear()
                    self._registry.refresh_due()
                    self._send_all()
            except Exception as error:  # the thread must survive anything
                if self._stopping.is_set():
                    break  # the client closed its queue under a late upload: expected
                self._log.report(
                    "uploader", "ldp-telemetry: upload failed: %s", type(error).__name__
                )
                self._failed()
            with self._progress:
                self._passes += 1
                self._progress.notify_all()

    def _wait_time(self) -> float:
        if not self._failures:
            return self._settings.flush_interval
        return max(0.0, self._resume_at - time.monotonic())

    def _send_all(self) -> None:
        while not self._stopping.is_set():
            batch = self._exporter.next_batch()
            if not batch:
                return
            outcome = self._exporter.send(batch)
            if outcome is Outcome.RETRY:
                self._failed(self._exporter.retry_after)
                return
            if outcome is Outcome.DONE:
                self._failures, self._resume_at = 0, 0.0
            with self._progress:
                self._progress.notify_all()

    def _failed(self, retry_after: float | None = None) -> None:
        """Count a failed attempt and back off: doubling from flush_interval, jittered,
        and never sooner than the collector's Retry-After."""
        self._failures += 1
        self._failed_ever += 1
        self._counters.batch_failed()
        interval = self._settings.flush_interval
        backoff = min(MAX_BACKOFF, interval * 2 ** min(self._failures - 1, 20))
        # Jitter: devices that lost the collector together do not come back in step.
        wait = backoff * (0.5 + random.random() / 2)
        if retry_after is not None:
            wait = max(wait, min(retry_after, MAX_BACKOFF))
        self._resume_at = time.monotonic() + wait
