"""The exporter: how a batch is sent and what the collector's answer means.

It claims the oldest unclaimed reports of one task within ``batch_size`` and ``max_batch_bytes``
(:meth:`ldp_telemetry.client.storage.Storage.claim`: on disk no other process sends them while the
claim holds; a batch not settled for good is released for the next attempt), frames them with
:func:`ldp_telemetry.shared.codec.batch_body`, gzips the body once (a batch sent again is the very
same bytes: same report ids, same noise), sends it, and settles the answer: 200 counts what was
accepted (``report_replayed`` means delivered; other per-report reasons are counted,
``outdated_config`` has the task fetched again); 413 (body too large, or more reports than the
collector's ``MAX_REPORTS_PER_BATCH``) halves that task's batches for the life of the client, down
to one report, and a single report still refused with 413 is dropped; any other 4xx drops the batch
(``batch_rejected``); 408, 429, 5xx and network errors leave it queued for the scheduler
(:mod:`ldp_telemetry.client.uploader.scheduler`) to retry after a backoff, and no sooner than the
answer's Retry-After (:attr:`Exporter.retry_after`).
"""

from __future__ import annotations

import contextlib
import enum
import gzip
import json
from typing import Any

from ldp_telemetry.client.errors import TransportError
from ldp_telemetry.client.log_once import LogOnce
from ldp_telemetry.client.settings import Settings
from ldp_telemetry.client.stats import Counters
from ldp_telemetry.client.storage import Pending, Storage
from ldp_telemetry.client.tasks import TaskRegistry
from ldp_telemetry.client.transport import Request, Response, Transport, retry_after
from ldp_telemetry.shared.codec import batch_body
from ldp_telemetry.shared.contract import (
    OUTDATED_CONFIG,
    PROTOCOL_HEADER,
    PROTOCOL_VERSION,
    REPORT_REPLAYED,
    problem_code,
    upload_path,
)

# Beyond the upload's deadline, a claim covers the work around it: the gzip before, and after
# it the removal, which may wait up to UPLOADER_BUSY_TIMEOUT_MS for the queue file.
LEASE_MARGIN = 15.0
_TRANSIENT = frozenset({408, 429})
_TOO_LARGE = 413
_ENVELOPE = len('{"reports":[]}')  # the body's bytes around the reports
_HEADERS = {
    "Content-Type": "application/json",
    "Content-Encoding": "gzip",
    PROTOCOL_HEADER: PROTOCOL_VERSION,
}


class Outcome(enum.Enum):
    """What became of one batch."""

    DONE = "done"  # delivered, or refused for good (counted): removed from the queue
    SPLIT = "split"  # too large: still queued, the task's batches are now halved
    RETRY = "retry"  # not delivered: still queued, sent again after a backoff


class Exporter:
    """Send batches from ``storage`` through ``transport`` and settle the answers."""

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
        self._storage, self._transport, self._registry = storage, transport, registry
        self._counters, self._log, self._settings = counters, log, settings
        self._last_body: tuple[tuple[str, ...], bytes] = ((), b"")
        self._caps: dict[str, int] = {}  # batch size per task after a 413 (halved each time)
        # The Retry-After of the last batch to be sent again (seconds, or None): the
        # scheduler waits at least this long before the next attempt.
        self.retry_after: float | None = None

    def next_batch(self) -> list[Pending]:
        """Claim the oldest free reports of one task, within the count and byte bounds.

        The claim lasts the upload's deadline plus ``LEASE_MARGIN``: :meth:`send` removes or
        releases the batch well before; if the process dies first, the claim lapses.
        """
        settings = self._settings
        lease = settings.retry.deadline + LEASE_MARGIN
        max_bytes = settings.max_batch_bytes - _ENVELOPE
        batch = self._storage.claim(settings.batch_size, max_bytes, lease)
        cap = self._caps.get(batch[0].task_id, len(batch)) if batch else 0
        if len(batch) > cap:
            self._storage.release(p.report_id for p in batch[cap:])
        return batch[:cap]

    def send(self, batch: list[Pending]) -> Outcome:
        """Send one claimed batch; remove it from the queue, or release it to be sent again."""
        try:
            outcome = self._send(batch)
        except BaseException:
            self._release(batch)  # the claim would lapse anyway: this only sends it sooner
            raise
        if outcome is Outcome.DONE:
            self._storage.remove(p.report_id for p in batch)
        else:
            self._release(batch)
        return outcome

    def _release(self, batch: list[Pending]) -> None:
        with contextlib.suppress(Exception):  # e.g. the file is busy: the claim lapses later
            self._storage.release(p.report_id for p in batch)

    def _send(self, batch: list[Pending]) -> Outcome:
        request = Request("POST", upload_path(batch[0].task_id), _HEADERS, self._body(batch))
        try:
            response = self._transport.handle(request, timeout=self._settings.retry.deadline)
        except TransportError as error:
            self.retry_after = error.retry_after
            self._counters.retried(error.retries)
            self._log.report(
                "network",
                "ldp-telemetry: cannot reach the collector (%s); reports stay queued",
                error,
            )
            return Outcome.RETRY
        self._counters.retried(response.retries)
        self.retry_after = retry_after(response.header("Retry-After"))
        return self._settle(batch, response)

    def _settle(self, batch: list[Pending], response: Response) -> Outcome:
        """Count what the answer says about a batch."""
        task_id, status = batch[0].task_id, response.status
        if status in (200, 202):  # 202: a shuffler spooled it (the collector's verdict follows)
            self._account(task_id, batch, response)
            return Outcome.DONE
        if status == _TOO_LARGE and len(batch) > 1:
            self._caps[task_id] = len(batch) // 2
            self._log.report(
                "split",
                "ldp-telemetry: the collector refused a batch "
                "of task %r as too large (%d reports); smaller batches "
                "follow",
                task_id,
                len(batch),
            )
            return Outcome.SPLIT
        if 400 <= status < 500 and status not in _TRANSIENT:
            self._counters.drop("batch_rejected", len(batch))
            self._counters.batch_failed()
            self._log.report(
                f"status:{status}",
                "ldp-telemetry: the collector refused a batch of task %r with %d %s; it is dropped",
                task_id,
                status,
                _problem_type(response),
            )
            return Outcome.DONE
        self._log.report(
            f"status:{status}",
            "ldp-telemetry: the collector answered %d; reports stay queued",
            status,
        )
        return Outcome.RETRY

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
            self._log.report(
                "answer", "ldp-telemetry: unexpected upload answer; the batch is taken as delivered"
            )
            self._counters.delivered(len(batch))
            return
        delivered = accepted
        for item in rejected:
            reason = item.get("reason") if isinstance(item, dict) else None
            if reason == REPORT_REPLAYED:
                delivered += 1
                continue
            self._counters.reject(str(reason))
            if reason == OUTDATED_CONFIG:
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
