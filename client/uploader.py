"""The uploader: one daemon thread that sends queued reports in batches.

The thread wakes when ``batch_size`` reports are queued, when ``flush_interval`` has
passed, or when ``flush``/``close`` ask; each time it first does the storage's upkeep
(the on-disk queue's checkpoint, kept off the caller's thread). Each batch holds
reports of one task, at most ``batch_size`` of them and ``max_batch_bytes`` of JSON,
gzip compressed; its body is built once and, if the batch has to be sent again, resent
byte for byte (same report ids, same noise). The transport retries connection errors,
timeouts, 429 and 5xx within its deadline; if that fails the batch stays queued and the
thread waits longer after each failure (doubling from ``flush_interval``, up to
``MAX_BACKOFF``, jittered); until then only a flush makes it send.

413 (body too large, or more reports than the collector's ``MAX_REPORTS_PER_BATCH``)
keeps the reports queued and halves that task's batches at once, for the life of the
client, down to one report; a single report still refused with 413 is dropped. Any
other 4xx drops the batch (``batch_rejected``). The server's per-report rejections are
counted by reason; ``report_replayed`` means delivered.
"""

from __future__ import annotations

import enum
import gzip
import json
import os
import random
import threading
import time
from typing import Any

from client.errors import TransportError
from client.problems import ProblemLog
from client.settings import Settings
from client.stats import Counters
from client.storage import Pending, Storage
from client.tasks import TaskRegistry
from client.transport import Request, Response, Transport
from shared.codec import batch_body
from shared.contract import problem_code

MAX_BACKOFF = 600.0
_TRANSIENT = frozenset({408, 429})
_TOO_LARGE = 413
_ENVELOPE = len('{"reports":[]}')  # the body's bytes around the reports
_HEADERS = {"Content-Type": "application/json", "Content-Encoding": "gzip"}


class _Outcome(enum.Enum):
    """What became of one batch."""

    DONE = "done"      # delivered, or refused for good (counted): removed from the queue
    SPLIT = "split"    # too large: still queued, the task's batches are now halved
    RETRY = "retry"    # not delivered: still queued, sent again after a backoff


class Uploader:
    """Send what ``storage`` holds through ``transport``, from one daemon thread."""

    def __init__(self, *, storage: Storage, transport: Transport, registry: TaskRegistry,
                 counters: Counters, problems: ProblemLog, settings: Settings) -> None:
        self._storage, self._transport, self._registry = storage, transport, registry
        self._counters, self._problems, self._settings = counters, problems, settings
        self._last_body: tuple[tuple[str, ...], bytes] = ((), b"")
        self._reset()

    def _reset(self) -> None:
        self._pid = os.getpid()
        self._thread: threading.Thread | None = None
        self._wake = threading.Event()
        self._flush_wanted = threading.Event()
        self._stopping = threading.Event()
        self._progress = threading.Condition()
        self._starting = threading.Lock()
        self._since_wake = 0    # reports queued since the thread last woke
        self._failures = 0      # consecutive failed attempts, sets the backoff
        self._failed_ever = 0   # every failed attempt, lets flush() see a new failure
        self._resume_at = 0.0   # monotonic time before which only a flush sends (backoff)
        self._caps: dict[str, int] = {}  # batch size per task after a 413 (halved each time)

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
        """Send everything queued; return True if the queue emptied within ``timeout``."""
        deadline = time.monotonic() + timeout
        self._ensure_started()
        failed_before = self._failed_ever
        self._flush_wanted.set()
        self._wake.set()
        with self._progress:
            while self._storage.count():
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._failed_ever != failed_before \
                        or self._stopping.is_set():
                    return False
                self._progress.wait(min(remaining, 0.05))
        return True

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
            if (self._thread is None or not self._thread.is_alive()) \
                    and not self._stopping.is_set():
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name="ldp-telemetry-uploader")
                self._thread.start()

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._wake.wait(self._wait_time())
            self._wake.clear()
            self._since_wake = 0
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
                self._problems.report("uploader", "ldp-telemetry: upload failed: %s",
                                      type(error).__name__)
                self._failed()
            with self._progress:
                self._progress.notify_all()

    def _wait_time(self) -> float:
        if not self._failures:
            return self._settings.flush_interval
        return max(0.0, self._resume_at - time.monotonic())

    def _send_all(self) -> None:
        while not self._stopping.is_set():
            batch = self._next_batch()
            if not batch:
                return
            outcome = self._send(batch)
            if outcome is _Outcome.RETRY:
                self._failed()
                return
            if outcome is _Outcome.DONE:
                self._failures, self._resume_at = 0, 0.0
            with self._progress:
                self._progress.notify_all()

    def _next_batch(self) -> list[Pending]:
        """Return the oldest reports of one task, within the count and byte bounds."""
        settings = self._settings
        batch = self._storage.peek(settings.batch_size, settings.max_batch_bytes - _ENVELOPE)
        return batch[:self._caps.get(batch[0].task_id, len(batch))] if batch else batch

    def _failed(self) -> None:
        """Count a failed attempt and back off: doubling from flush_interval, jittered."""
        self._failures += 1
        self._failed_ever += 1
        self._counters.batch_failed()
        interval = self._settings.flush_interval
        backoff = min(MAX_BACKOFF, interval * 2 ** min(self._failures - 1, 20))
        # Jitter: devices that lost the collector together do not come back in step.
        self._resume_at = time.monotonic() + backoff * (0.5 + random.random() / 2)

    def _send(self, batch: list[Pending]) -> _Outcome:
        """Send one batch; remove it from the queue unless it must be sent again."""
        request = Request("POST", f"/v1/tasks/{batch[0].task_id}/reports", _HEADERS,
                          self._body(batch))
        try:
            response = self._transport.handle(request, timeout=self._settings.retry.deadline)
        except TransportError as error:
            self._counters.retried(error.retries)
            self._problems.report("network", "ldp-telemetry: cannot reach the collector "
                                  "(%s); reports stay queued", error)
            return _Outcome.RETRY
        self._counters.retried(response.retries)
        outcome = self._settle(batch, response)
        if outcome is _Outcome.DONE:
            self._storage.remove(p.report_id for p in batch)
        return outcome

    def _settle(self, batch: list[Pending], response: Response) -> _Outcome:
        """Count what the answer says about a batch."""
        task_id, status = batch[0].task_id, response.status
        if status == 200:
            self._account(task_id, batch, response)
            return _Outcome.DONE
        if status == _TOO_LARGE and len(batch) > 1:
            self._caps[task_id] = len(batch) // 2
            self._problems.report("split", "ldp-telemetry: the collector refused a batch "
                                  "of task %r as too large (%d reports); smaller batches "
                                  "follow", task_id, len(batch))
            return _Outcome.SPLIT
        if 400 <= status < 500 and status not in _TRANSIENT:
            self._counters.drop("batch_rejected", len(batch))
            self._counters.batch_failed()
            self._problems.report(f"status:{status}", "ldp-telemetry: the collector refused a "
                                  "batch of task %r with %d %s; it is dropped", task_id, status,
                                  _problem_type(response))
            return _Outcome.DONE
        self._problems.report(f"status:{status}", "ldp-telemetry: the collector answered %d; "
                              "reports stay queued", status)
        return _Outcome.RETRY

    def _body(self, batch: list[Pending]) -> bytes:
        ids = tuple(p.report_id for p in batch)
        if self._last_body[0] != ids:
            raw = batch_body(p.report for p in batch)
            self._last_body = (ids, gzip.compress(raw, compresslevel=6, mtime=0))
        return self._last_body[1]

    def _account(self, task_id: str, batch: list[Pending], response: Response) -> None:
        answer = _json(response)
        accepted, rejected = answer.get("accepted"), answer.get("rejected")
        if not isinstance(accepted, int) or not isinstance(rejected, list):
            self._problems.report("answer", "ldp-telemetry: unexpected upload answer; "
                                  "the batch is taken as delivered")
            self._counters.delivered(len(batch))
            return
        delivered = accepted
        for item in rejected:
            reason = item.get("reason") if isinstance(item, dict) else None
            if reason == "report_replayed":
                delivered += 1
                continue
            self._counters.reject(str(reason))
            if reason == "outdated_config":
                self._registry.invalidate(task_id)
        self._counters.delivered(delivered)


def _json(response: Response) -> dict[str, Any]:
    try:
        data = json.loads(response.body)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _problem_type(response: Response) -> str:
    return problem_code(_json(response))
