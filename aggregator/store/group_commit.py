"""Group commit: the uploads waiting in one process share one store transaction.

Each worker process has one writer thread. An upload, once validated, is handed to it as
an :class:`~aggregator.store.interface.Upload` and its future is awaited (the RSGI bridge
awaits it on the event loop, so the loop keeps reading and validating other requests
meanwhile; a thread of a threaded server blocks on it). The writer takes whatever is
waiting, up to ``max_reports`` reports or ``max_wait`` seconds after the first, commits it
with one :meth:`~aggregator.store.interface.Store.add_uploads`, and only then resolves each
future: an upload is acknowledged after the transaction holding its reports has committed,
so ``kill -9`` after an ack loses nothing, and an id sent by two uploads of one group is
counted once.

If the transaction fails for a store fault (disk full, database locked or unwritable),
every member gets that error, which the views answer as a retryable 503/507: nothing of
the group was stored. Any other error is isolated: each member is retried alone, so one
upload that trips a bug cannot fail the others.

The writer also forgets expired report ids every ``collect_interval`` seconds, between two
groups, so no request waits for it.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from concurrent.futures import Future

from aggregator.metrics import GROUP_REPORTS, GROUP_UPLOADS
from aggregator.store.interface import Store, StoreUnavailable, Upload

log = logging.getLogger(__name__)
_STOP = None  # the queue's end marker


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
        self._queue: queue.SimpleQueue[tuple[Upload, Future[set[bytes]]] | None] = (
            queue.SimpleQueue()
        )
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._last_collect = 0.0

    def submit(self, upload: Upload) -> Future[set[bytes]]:
        """Queue an upload; the future gives its replayed ids once its group committed."""
        if self._thread is None or self._pid != os.getpid():
            self._start()
        future: Future[set[bytes]] = Future()
        self._queue.put((upload, future))
        return future

    def add(self, upload: Upload) -> set[bytes]:
        """Commit an upload with the waiting ones; return its replayed ids (blocks)."""
        return self.submit(upload).result()

    def close(self, timeout: float = 30.0) -> None:
        """Commit what is queued, then stop the writer thread."""
        thread = self._thread
        if thread is not None and self._pid == os.getpid():
            self._queue.put(_STOP)
            thread.join(timeout)
        self._thread = None

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
            if first is _STOP:
                return
            group, reports = [first], len(first[0].envelopes)
            deadline = time.monotonic() + self.max_wait
            stop = False
            while reports < self.max_reports:
                try:
                    wait = deadline - time.monotonic()
                    item = self._queue.get(timeout=wait) if wait > 0 else self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is _STOP:
                    stop = True
                    break
                group.append(item)
                reports += len(item[0].envelopes)
            self._commit(group)
            GROUP_UPLOADS.observe(len(group))
            GROUP_REPORTS.observe(reports)
            self._collect()
            if stop:
                return

    def _commit(self, group: list[tuple[Upload, Future[set[bytes]]]]) -> None:
        live = [
            (upload, future) for upload, future in group if future.set_running_or_notify_cancel()
        ]
        if not live:
            return
        try:
            results = self.store.add_uploads([upload for upload, _ in live])
        except StoreUnavailable as error:  # nothing was stored: every member may resend
            for _, future in live:
                future.set_exception(error)
        except Exception as error:
            if len(live) == 1:
                live[0][1].set_exception(error)
            else:
                for upload, future in live:
                    self._commit_alone(upload, future)
        else:
            for (_, future), replayed in zip(live, results, strict=True):
                future.set_result(replayed)

    def _commit_alone(self, upload: Upload, future: Future[set[bytes]]) -> None:
        try:
            future.set_result(self.store.add_uploads([upload])[0])
        except Exception as error:
            future.set_exception(error)

    def _collect(self) -> None:
        now = time.time()
        if now - self._last_collect < self.collect_interval:
            return
        self._last_collect = now
        try:
            self.store.collect_expired(int(now))
        except Exception as error:  # the next collection takes these ids too
            log.warning("forgetting expired report ids failed: %s", error)
