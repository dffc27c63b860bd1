"""Folds a PostgreSQL node owes, run on a thread of their own instead of the writer's.

A node folds a task once it has staged ``staged_bytes`` of it. Run on the group-commit
writer thread, that fold (seconds for a large sketch: every touched sums and roll-up row
read and rewritten) held every upload of the process until it ended; measured with py-spy
under ``benchmarks.store.cluster_ingest`` at 100 reports per request, one node's writer spent
62 % of 8 s folding. A fold is its own transaction under the task's fold lock, so it can run
beside the writer's commits: staged rows committed meanwhile stay for the next fold. Reads
still fold first, on their own thread (:meth:`PostgresStore.fold_staged`).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable

from ldp_telemetry.shared import TaskConfig

log = logging.getLogger(__name__)


class Folder:
    """One thread per process that runs the folds asked for, each task at most once queued."""

    def __init__(self, fold: Callable[[TaskConfig], None]) -> None:
        self._fold = fold
        self._wake = threading.Condition()
        self._due: dict[str, TaskConfig] = {}  # insertion order: oldest request first
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._closed = False

    def ask(self, task: TaskConfig) -> None:
        """Fold the task soon (a no-op if it is already waiting)."""
        with self._wake:
            if self._thread is None or self._pid != os.getpid():
                # threads do not cross a fork: a child starts its own, with nothing due
                self._due, self._pid, self._closed = {}, os.getpid(), False
                self._thread = threading.Thread(target=self._run, name="ldp-fold", daemon=True)
                self._thread.start()
            self._due.setdefault(task.task_id, task)
            self._wake.notify()

    def close(self, timeout: float = 10.0) -> None:
        """Stop the thread after the fold it is running (folds still waiting are dropped)."""
        with self._wake:
            thread, self._closed = self._thread, True
            self._due.clear()
            self._wake.notify()
        if thread is not None and self._pid == os.getpid():
            thread.join(timeout)
        self._thread = None

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._due and not self._closed:
                    self._wake.wait()
                if self._closed:
                    return
                task_id = next(iter(self._due))
                task = self._due.pop(task_id)
            try:
                self._fold(task)
            except Exception as error:  # staged rows stay: the next fold or read takes them
                log.warning("folding task %s failed: %s", task.task_id, error)
