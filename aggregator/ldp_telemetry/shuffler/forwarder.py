"""The forwarder: one thread that turns ready groups into shuffled batches and sends them.

A (task, time) group is ready when its waiting reports come from at least ``batch_min``
distinct uploads. Each batch is written to the spool first, its reports' JSON put in an
order drawn with the OS CSPRNG (``secrets.SystemRandom``), and sent as an ordinary upload
body — nothing of the devices' requests (headers, addresses, arrival times, which reports
came together) — to ``PUT {upstream}/v1/tasks/{id}/shuffled/{batch_id}?uploads=K`` under
the shuffler's token; for a task with public dimensions also ``&slice_counts=i:K,...``, the distinct
uploads among each slice's reports (the task's dimensions, fetched once per task, number the
clear ``dims``). Only the collector's 2xx marks it forwarded; until then it is resent
(same id, same reports: counted once). Network errors, 429 and 5xx are retried by urllib3
(honouring Retry-After), then again on the next round; a 400/404/413/422 fails the batch
for the operator to look at (its reports are not resent).
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from ldp_telemetry.shared import DecodeError
from ldp_telemetry.shared.contract import (
    SHUFFLED_PATH,
    SHUFFLED_SLICES,
    SHUFFLED_UPLOADS,
    TASK_PATH,
    fill,
)
from ldp_telemetry.shared.dimensions import Dimensions
from ldp_telemetry.shared.wire import b64encode
from ldp_telemetry.shuffler.spool import BATCH_CLOSE, BATCH_OPEN, Batch, Spool

log = logging.getLogger("ldp.shuffler")
FAILED = (400, 404, 413, 422)  # the batch itself is wrong: resending cannot help
PRUNE_EVERY = 60.0  # seconds between removals of expired ids
IN_FLIGHT = 4  # batches sent at once


class UpstreamError(Exception):
    """The collector did not take a batch now; it stays open and is resent later."""


def session_with_retries(retries: int = 4) -> requests.Session:
    """Return a session that retries network errors, 429 and 5xx with backoff (waiting
    Retry-After when the collector sends one)."""
    policy = Retry(
        total=retries,
        backoff_factor=0.2,
        status_forcelist=(429, 500, 502, 503, 504, 507),  # 507: a full disk, Retry-After 60
        allowed_methods=frozenset({"GET", "PUT"}),  # PUT of a batch id is idempotent
        respect_retry_after_header=True,
        raise_on_status=False,
    )
    session = requests.Session()
    session.mount("http://", HTTPAdapter(max_retries=policy))
    session.mount("https://", HTTPAdapter(max_retries=policy))
    return session


class Forwarder:
    """Sends ready batches from a spool to the collector, from one daemon thread."""

    def __init__(
        self,
        spool: Spool,
        *,
        upstream: str,
        token: str,
        batch_min: int,
        batch_max: int,
        batch_bytes: int | None = None,
        interval: float = 0.5,
    ) -> None:
        self.spool, self.upstream, self.token = spool, upstream.rstrip("/"), token
        self.batch_min, self.batch_max, self.interval = batch_min, batch_max, interval
        self.batch_bytes = batch_bytes  # the collector's MAX_BODY_BYTES: a batch's body fits it
        self.session = session_with_retries()
        self.wake, self.stopping = threading.Event(), threading.Event()
        self.forwarded = Counter[str]()  # batches, reports, and the collector's verdicts
        self._counting = threading.Lock()  # senders run in several threads
        self._thread: threading.Thread | None = None
        self._pruned = 0.0
        self._dimensions: dict[str, Dimensions | None] = {}  # tasks are immutable: kept

    def counters(self) -> dict[str, int]:
        """Return a copy of the counters: batches, reports, accepted, rejected:<reason>."""
        with self._counting:
            return dict(self.forwarded)

    def start(self) -> None:
        """Start the thread (once)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="ldp-shuffler", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the thread after its current batch."""
        self.stopping.set()
        self.wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        pause = self.interval
        while not self.stopping.is_set():
            try:
                self.forward_ready()
                pause = self.interval
            except (UpstreamError, requests.RequestException) as error:
                log.warning("ldp-shuffler: the collector took no batch now (%s); retrying", error)
                pause = min(30.0, pause * 2)
            except Exception:
                log.exception("ldp-shuffler: forwarding failed; retrying")
                pause = min(30.0, pause * 2)
            self.wake.wait(pause)
            self.wake.clear()

    def forward_ready(self) -> int:
        """Resend open batches, then batch and send every ready group; return reports sent.

        Batches are written here, one after the other, and sent by ``IN_FLIGHT`` threads
        (the collector commits concurrent uploads together). A failed send leaves its
        batch open for the next round; the first error is raised after the others finish.
        """
        with ThreadPoolExecutor(IN_FLIGHT, thread_name_prefix="ldp-shuffler-send") as pool:
            sending = [pool.submit(self.send, batch) for batch in self.spool.open_batches()]
            groups = self.spool.ready(self.batch_min)
            while groups and not self.stopping.is_set():
                for task_id, bucket in groups:
                    batch = self.spool.claim(
                        task_id, bucket, self.batch_min, self.batch_max, self.batch_bytes
                    )
                    if batch.uploads < self.batch_min:  # its reports are too large for more
                        log.warning(
                            "ldp-shuffler: a batch of task %r holds %d uploads, below "
                            "--batch-min, to fit the collector's body limit (%d bytes); the "
                            "collector's central epsilon counts %d",
                            task_id,
                            batch.uploads,
                            self.batch_bytes,
                            batch.uploads,
                        )
                    sending.append(pool.submit(self.send, batch))
                groups = self.spool.ready(self.batch_min)
        sent = sum(future.result() for future in sending)
        if time.monotonic() - self._pruned > PRUNE_EVERY:
            self._pruned = time.monotonic()
            dropped = self.spool.prune(int(time.time()))
            if dropped:
                log.warning(
                    "ldp-shuffler: %d reports expired before %d uploads could hide them: dropped",
                    dropped,
                    self.batch_min,
                )
        return sent

    def send(self, batch: Batch) -> int:
        """Send one batch in a fresh CSPRNG order; return its reports once acknowledged."""
        bodies = self.spool.bodies(batch)
        secrets.SystemRandom().shuffle(bodies)
        data = BATCH_OPEN + b",".join(bodies) + BATCH_CLOSE
        path = fill(
            SHUFFLED_PATH, task_id=quote(batch.task_id, safe=""), batch_id=b64encode(batch.batch_id)
        )
        url = f"{self.upstream}{path}?{SHUFFLED_UPLOADS}={batch.uploads}"
        sliced = self.slice_counts(batch) if batch.slice_uploads else ""
        if sliced:
            url += f"&{SHUFFLED_SLICES}={sliced}"
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        response = self.session.put(url, data=data, headers=headers, timeout=(5, 120))
        if response.ok:
            self.spool.settle(batch, "forwarded")
            self._count(response, len(bodies))
            return len(bodies)
        if response.status_code in FAILED:
            self.spool.settle(batch, "failed")
            log.error(
                "ldp-shuffler: the collector refused a batch of %d reports of task %r with %d: %s",
                len(bodies),
                batch.task_id,
                response.status_code,
                response.text[:300],
            )
            with self._counting:
                self.forwarded["failed_batches"] += 1
            return 0
        raise UpstreamError(f"HTTP {response.status_code}")

    def slice_counts(self, batch: Batch) -> str:
        """Return a batch's distinct uploads per slice index, as ``i:K,i:K`` (dims the task
        does not take are left out: the collector refuses those reports)."""
        dimensions = self.dimensions(batch.task_id)
        if dimensions is None:  # dims sent to a task without: every one will be refused
            return ""
        counts: dict[int, int] = {}
        for key, uploads in batch.slice_uploads.items():
            try:
                counts[dimensions.slice_of_report(json.loads(key))] = uploads
            except DecodeError:
                continue
        return ",".join(f"{index}:{uploads}" for index, uploads in sorted(counts.items()))

    def dimensions(self, task_id: str) -> Dimensions | None:
        """Return a task's dimensions (None: it has none), asked of the collector once per
        task (tasks are immutable)."""
        if task_id not in self._dimensions:
            path = fill(TASK_PATH, task_id=quote(task_id, safe=""))
            answer = self.session.get(f"{self.upstream}{path}", timeout=(5, 30))
            if not answer.ok:
                raise UpstreamError(f"HTTP {answer.status_code} for task {task_id!r}")
            declared = answer.json().get("dimensions")
            self._dimensions[task_id] = None if declared is None else Dimensions.parse(declared)
        return self._dimensions[task_id]

    def _count(self, response: requests.Response, reports: int) -> None:
        try:
            verdict = response.json()
            reasons = Counter(str(r.get("reason")) for r in verdict.get("rejected", []))
            accepted = int(verdict.get("accepted", 0))
        except (ValueError, AttributeError, TypeError):
            log.warning("ldp-shuffler: the collector's answer to a batch was not the usual JSON")
            reasons, accepted = Counter(), 0
        with self._counting:
            self.forwarded.update(batches=1, reports=reports, accepted=accepted)
            self.forwarded.update({f"rejected:{k}": v for k, v in reasons.items()})
