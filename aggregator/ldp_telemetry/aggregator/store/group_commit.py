"""Group commit: the uploads waiting in one process share one store transaction.

Each worker process has one writer thread. An upload, once checked, is handed to it as an
:class:`~ldp_telemetry.aggregator.store.interface.Upload`, from a thread of a WSGI server
(:meth:`GroupCommitter.submit`, the thread blocks on the future) or from the RSGI bridge's event
loop (:meth:`GroupCommitter.submit_async`: the loop gathers the uploads it checked in one pass and
hands them over together, then goes on reading other requests). The writer takes whatever is
waiting, up to ``max_reports`` reports or ``max_wait`` seconds after the first (see
:meth:`GroupCommitter._gather` for when it stops waiting sooner), commits it with one
:meth:`~ldp_telemetry.aggregator.store.interface.Store.add_uploads`, and only then answers each
member: an upload is acknowledged after the transaction holding its reports has committed, so ``kill
-9`` after an ack loses nothing, and an id sent by two uploads of one group is counted once. A
loop's members are answered with one wake-up of the loop per group, not one per upload.

Waiting for the database's write lock (another worker's transaction, a fold, a backup)
happens on the writer thread, never on the event loop: slow commits delay acks but never
stop a worker from reading requests.

If the transaction fails for a store fault (disk full, database locked or unwritable),
every member gets that error, which the views answer as a retryable 503/507: nothing of
the group was stored. Any other error is isolated: each member is retried alone, so one
upload that trips a bug cannot fail the others.

The writer also forgets expired report ids every ``collect_interval`` seconds, between two
groups, so no request waits for it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from ldp_telemetry.aggregator.core.metrics import GROUP_REPORTS, GROUP_UPLOADS
from ldp_telemetry.aggregator.store.interface import Store, StoreUnavailable, Upload

log = logging.getLogger(__name__)
Answer = set[bytes] | BaseException  # replayed ids, or why the upload was not stored
# Groups whose sizes set how many uploads a group waits for (GroupCommitter._gather): enough
# that one small group among large ones does not end the wait, few enough that the wait
# follows a load that falls (16 groups: ~0.1 s at the 150 commits/s per node measured with
# benchmarks.store.cluster_ingest at 1 report per request).
RECENT_GROUPS = 16


@dataclass
class _Handover:
    """Uploads handed over together, and how their answers reach their waiters."""

    uploads: list[Upload]
    deliver: Callable[[list[Answer]], None]  # called on the writer thread
    reports: int = field(init=False)

    def __post_init__(self) -> None:
        self.reports = sum(len(upload.envelopes) for upload in self.uploads)


def commit_group(store: Store, uploads: Sequence[Upload]) -> list[Answer]:
    """Commit the uploads in one transaction; return each one's replayed ids or error.

    A store fault fails every member with it (nothing was stored; each may resend); any
    other error is isolated by retrying each member alone.
    """
    if not uploads:
        return []
    try:
        results: list[Answer] = list(store.add_uploads(uploads))
    except StoreUnavailable as error:
        return [error] * len(uploads)
    except Exception as error:
        if len(uploads) == 1:
            return [error]
        return [commit_group(store, [upload])[0] for upload in uploads]
    GROUP_UPLOADS.observe(len(uploads))
    GROUP_REPORTS.observe(sum(len(upload.envelopes) for upload in uploads))
    return results


class GroupCommitter:
    """One writer thread per process committing waiting uploads together."""

    def __init__(
        self,
        store: Store,
        *,
        max_reports: int = 10_000,
        max_wait: float = 0.0,
        collect_interval: float = 60.0,
    ) -> None:
        self.store, self.max_reports, self.max_wait = store, max_reports, max_wait
        self.collect_interval = collect_interval
        self._queue: queue.SimpleQueue[_Handover | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._last_collect = 0.0
        self._recent: deque[int] = deque(maxlen=RECENT_GROUPS)  # uploads per recent group
        # the event loop's uploads not handed over yet (one loop per worker process)
        self._gathered: list[tuple[Upload, asyncio.Future[set[bytes]]]] = []
        self._gathering = False

    # -- from threads -----------------------------------------------------------------

    def submit(self, upload: Upload) -> Future[set[bytes]]:
        """Queue an upload; the future gives its replayed ids once its group committed."""
        future: Future[set[bytes]] = Future()
        future.set_running_or_notify_cancel()
        self._hand_over(_Handover([upload], lambda answers: _settle(future, answers[0])))
        return future

    def add(self, upload: Upload) -> set[bytes]:
        """Commit an upload with the waiting ones; return its replayed ids (blocks)."""
        return self.submit(upload).result()

    # -- from an event loop ---------------------------------------------------------------

    def submit_async(self, upload: Upload) -> asyncio.Future[set[bytes]]:
        """Queue an upload from the running loop; await the future for its replayed ids.

        The loop's uploads are handed over together once it has run every callback that
        is ready now, so the requests it checked in one pass share a hand-over.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[set[bytes]] = loop.create_future()
        self._gathered.append((upload, future))
        if not self._gathering:
            self._gathering = True
            loop.call_soon(self._hand_over_gathered, loop)
        return future

    def _hand_over_gathered(self, loop: asyncio.AbstractEventLoop) -> None:
        gathered, self._gathered, self._gathering = self._gathered, [], False
        # a request cancelled meanwhile (its client left) is not stored: it was never answered
        members = [(upload, future) for upload, future in gathered if not future.done()]
        if not members:
            return

        def deliver(answers: list[Answer]) -> None:
            loop.call_soon_threadsafe(_settle_all, [f for _, f in members], answers)

        self._hand_over(_Handover([upload for upload, _ in members], deliver))

    # -- the writer -----------------------------------------------------------------------

    def close(self, timeout: float = 30.0) -> None:
        """Commit what is queued, then stop the writer thread."""
        thread = self._thread
        if thread is not None and self._pid == os.getpid():
            self._queue.put(None)
            thread.join(timeout)
        self._thread = None

    def _hand_over(self, handover: _Handover) -> None:
        if self._thread is None or self._pid != os.getpid():
            self._start()
        self._queue.put(handover)

    def _start(self) -> None:
        with self._lock:  # a forked child starts its own writer (threads do not cross a fork)
            if self._thread is None or self._pid != os.getpid():
                if self._pid != os.getpid():
                    self._queue = queue.SimpleQueue()
                self._pid = os.getpid()
                self._thread = threading.Thread(
                    target=self._run, name="ldp-group-commit", daemon=True
                )
                self._thread.start()

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            group, stop = self._gather(first)
            answers = commit_group(self.store, [u for handover in group for u in handover.uploads])
            start = 0
            for handover in group:
                end = start + len(handover.uploads)
                try:
                    handover.deliver(answers[start:end])
                except Exception as error:  # e.g. the waiter's event loop has closed
                    # the writer must outlive any one waiter: the others still need it
                    log.warning("an upload's answer could not be delivered: %s", error)
                start = end
            self._collect_expired()
            if stop:
                return

    def _gather(self, first: _Handover) -> tuple[list[_Handover], bool]:
        """Return the hand-overs to commit with ``first``, and whether to stop after.

        A group waits up to ``max_wait`` for more uploads only until it holds as many as
        the largest of the last :data:`RECENT_GROUPS` groups, then takes what is queued
        already and commits: waiting longer pays only if more uploads come, and what
        comes is bounded by the uploads that are out. Lightly loaded (groups of one), an
        upload commits at once; when every upload of a client pool is in the group
        (each client waits for its answer before it sends again), the group commits
        without waiting out ``max_wait`` for uploads that cannot come (2 ms on
        PostgreSQL, idle on the nodes: benchmarks/README.md, "PostgreSQL at SQLite's
        pace"); under a steady stream, groups rarely reach the largest recent one and wait
        the whole ``max_wait``, as large as ever.
        """
        group, reports, uploads = [first], first.reports, len(first.uploads)
        expected = max(self._recent, default=1)
        deadline = time.monotonic() + self.max_wait
        stop = False
        while reports < self.max_reports:
            try:
                wait = deadline - time.monotonic() if uploads < expected else 0.0
                item = self._queue.get(timeout=wait) if wait > 0 else self._queue.get_nowait()
            except queue.Empty:
                break
            if item is None:
                stop = True
                break
            group.append(item)
            reports += item.reports
            uploads += len(item.uploads)
        self._recent.append(uploads)
        return group, stop

    def _collect_expired(self) -> None:
        now = time.time()
        if now - self._last_collect < self.collect_interval:
            return
        self._last_collect = now
        try:
            self.store.collect_expired(int(now))
        except Exception as error:  # the next collection takes these ids too
            log.warning("forgetting expired report ids failed: %s", error)


def _settle(future: Any, answer: Answer) -> None:
    if future.done():  # an asyncio future whose request was cancelled
        return
    if isinstance(answer, BaseException):
        future.set_exception(answer)
    else:
        future.set_result(answer)


def _settle_all(futures: list[asyncio.Future[set[bytes]]], answers: list[Answer]) -> None:
    for future, answer in zip(futures, answers, strict=True):
        _settle(future, answer)
