"""Where the client gets each task's public configuration: pinned, cached or fetched.

Nothing here touches the network on the caller's thread. ``get`` answers at once from
what is known: a pinned task, a configuration fetched before, or one kept on disk beside
the queue (``data_dir``). A task seen for the first time is only *wanted*: ``get``
returns None (the caller drops and counts that record) and wakes the uploader thread,
which fetches it with ``GET /v1/tasks/{id}``; records made after that use it. Tasks named
at start (``Client(task_ids=...)``) are fetched at once; ``wait`` lets a script block
until they are known, by its own choice.

The uploader thread also revalidates known configurations when their ``max-age`` has
passed (``If-None-Match`` with the ETag, a 304 keeps it) and retries failed fetches every
``RETRY_FAILED`` seconds. A stale configuration stays in use while the server is
unreachable. An answer is checked: a valid task with the asked id, of the protocol
version this SDK speaks, whose fingerprint and published derived integers (thresholds,
g, levels…) are the ones its parameters give here; else it is refused and counted in
``stats().refused_tasks`` (and so is a cached file that does not pass the same checks).
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ldp_telemetry.client.errors import ConfigurationError, TaskUnavailableError, TransportError
from ldp_telemetry.client.log_once import LogOnce
from ldp_telemetry.client.stats import Counters
from ldp_telemetry.client.transport import Request, Response, Transport
from ldp_telemetry.shared.contract import task_path
from ldp_telemetry.shared.errors import LdpError
from ldp_telemetry.shared.sealing import sealable
from ldp_telemetry.shared.task import TASK_ID, DerivedMismatch, TaskConfig

CACHE_FILE = "tasks.json"
DEFAULT_MAX_AGE = 60.0
MAX_AGE_CAP = 86_400.0
RETRY_FAILED = 30.0
_MAX_AGE = re.compile(r"max-age=(\d+)", re.IGNORECASE)


@dataclass
class _Entry:
    task: TaskConfig | None
    etag: str | None
    due: float  # monotonic time of the next revalidation (or retry after a failure)


class TaskRegistry:
    """Task configurations by id; thread-safe. Only the uploader thread fetches."""

    def __init__(
        self,
        transport: Transport,
        *,
        pinned: Iterable[TaskConfig] = (),
        timeout: float,
        log: LogOnce,
        counters: Counters | None = None,
        cache_dir: Path | None = None,
        wake: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._transport = transport
        self._timeout = timeout
        self._log = log
        self._counters = counters or Counters()
        self._clock = clock
        self._wake = wake
        self._pinned = _check_pinned(pinned)
        self._cache = None if cache_dir is None else cache_dir / CACHE_FILE
        self._entries: dict[str, _Entry] = self._load_cache()
        self._changed = threading.Condition()

    def after_fork(self) -> None:
        """Replace the condition (another thread may have held it at fork time)."""
        self._changed = threading.Condition()

    def get(self, task_id: str) -> TaskConfig | None:
        """Return the task's configuration if known now; else want it and return None."""
        pinned = self._pinned.get(task_id)
        if pinned is not None:
            return pinned
        entry = self._entries.get(task_id)
        if entry is None:
            self.want([task_id])
            return None
        return entry.task

    def want(self, task_ids: Iterable[str]) -> None:
        """Have the uploader thread fetch these tasks (unknown ones) as soon as it can."""
        added = False
        for task_id in task_ids:
            if task_id in self._pinned or task_id in self._entries:
                continue
            if not isinstance(task_id, str) or not TASK_ID.fullmatch(task_id):
                self._log.report(
                    "task:invalid",
                    "ldp-telemetry: %r is not a valid task id; its records are dropped",
                    str(task_id)[:80],
                )
                continue
            self._entries.setdefault(task_id, _Entry(None, None, 0.0))
            added = True
        if added:
            self._wake()

    def wait(self, task_ids: Iterable[str] | None, timeout: float) -> bool:
        """Block until these tasks (None: every wanted one) are known; False on timeout."""
        wanted = list(self._entries) if task_ids is None else list(task_ids)
        self.want(wanted)
        deadline = self._clock() + timeout
        with self._changed:
            while not all(self._known(task_id) for task_id in wanted):
                remaining = deadline - self._clock()
                if remaining <= 0:
                    return False
                self._wake()
                self._changed.wait(min(remaining, 0.1))
        return True

    def _known(self, task_id: str) -> bool:
        entry = self._entries.get(task_id)
        return task_id in self._pinned or (entry is not None and entry.task is not None)

    def refresh_due(self) -> None:
        """Fetch wanted tasks, revalidate stale ones, retry failures (uploader thread)."""
        now = self._clock()
        fetched = False
        for task_id, entry in list(self._entries.items()):
            if now >= entry.due:
                fetched |= self._fetch(task_id, entry) is not entry
        if fetched:
            self._save_cache()
            with self._changed:
                self._changed.notify_all()

    def invalidate(self, task_id: str) -> None:
        """Make the next refresh revalidate a task (the server said it is outdated)."""
        entry = self._entries.get(task_id)
        if entry is not None:
            entry.due = 0.0

    def _load_cache(self) -> dict[str, _Entry]:
        """Read the configurations kept on disk; each is checked as a fetched one is."""
        if self._cache is None or not self._cache.exists():
            return {}
        try:
            stored = json.loads(self._cache.read_text(encoding="utf-8"))["tasks"]
            entries = {}
            for task_id, item in stored.items():
                task = TaskConfig.from_dict(item["config"])
                if task.task_id == task_id:
                    entries[task_id] = _Entry(task, item.get("etag"), 0.0)  # revalidate soon
            return entries
        except (OSError, ValueError, KeyError, TypeError, AttributeError, LdpError):
            self._log.report(
                "task:cache",
                "ldp-telemetry: the task cache %s is unreadable; tasks are fetched again",
                self._cache,
            )
            return {}

    def _save_cache(self) -> None:
        """Keep the known configurations beside the queue (atomic replace, mode 0600)."""
        if self._cache is None:
            return
        known = {
            task_id: {"config": e.task.to_dict(), "etag": e.etag}
            for task_id, e in list(self._entries.items())
            if e.task is not None
        }
        temporary = self._cache.with_suffix(".tmp")
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump({"tasks": known}, out)
            os.replace(temporary, self._cache)
        except OSError as error:
            self._log.report(
                "task:cache",
                "ldp-telemetry: cannot keep task configurations on disk (%s)",
                type(error).__name__,
            )

    def _fetch(self, task_id: str, old: _Entry | None) -> _Entry:
        try:
            entry = self._request(task_id, old if old is not None and old.task else None)
        except (TaskUnavailableError, TransportError) as error:
            self._log.report(
                f"task:{task_id}",
                "ldp-telemetry: task %r is unavailable (%s); its records are dropped until it is",
                task_id,
                error,
            )
            # The same entry, so refresh_due sees no change to report or save.
            entry = old if old is not None else _Entry(None, None, 0.0)
            entry.due = self._clock() + RETRY_FAILED
            self._entries[task_id] = entry
            return entry
        self._entries[task_id] = entry
        return entry

    def _request(self, task_id: str, old: _Entry | None) -> _Entry:
        if not TASK_ID.fullmatch(task_id):
            raise TaskUnavailableError("not a valid task id")
        headers = {"Accept": "application/json"}
        if old is not None and old.etag and old.task is not None:
            headers["If-None-Match"] = old.etag
        try:
            response = self._transport.handle(
                Request("GET", task_path(task_id), headers), timeout=self._timeout
            )
        except TransportError:
            raise
        except Exception as error:  # a broken custom transport must not reach the app
            raise TaskUnavailableError(f"transport raised {type(error).__name__}") from None
        due = self._clock() + _max_age(response)
        if response.status == 304 and old is not None and old.task is not None:
            return _Entry(old.task, old.etag, due)
        if response.status != 200:
            raise TaskUnavailableError(f"the server answered {response.status}")
        return _Entry(self._parse_task(task_id, response), response.header("ETag"), due)

    def _parse_task(self, task_id: str, response: Response) -> TaskConfig:
        try:
            return _parse_task(task_id, response)
        except DerivedMismatch:
            self._counters.refuse_task("derived_mismatch")
            raise TaskUnavailableError(
                "the task's published derived integers disagree with this SDK's: refused"
            ) from None
        except TaskUnavailableError:
            self._counters.refuse_task("invalid")
            raise


def _parse_task(task_id: str, response: Response) -> TaskConfig:
    try:
        served = json.loads(response.body)
        # A served task always has both (PROTOCOL.md §1.1); from_dict also reads stored
        # pre-1.0 tasks, which had neither.
        if not isinstance(served, dict) or not {"protocol", "derived"} <= served.keys():
            raise TaskUnavailableError("the served task lacks protocol or derived: refused")
        task = TaskConfig.from_dict(served)
    except DerivedMismatch:
        raise
    except (ValueError, LdpError, TypeError):
        raise TaskUnavailableError("the server's task configuration is invalid") from None
    if task.task_id != task_id:
        raise TaskUnavailableError(f"the server answered task {task.task_id!r}")
    if task.sealed and task.seal is None:  # nothing to seal to: never send it in the clear
        raise TaskUnavailableError("the sealed task is served without the collector's key")
    if task.seal is not None and not sealable(task.seal.public_key):
        raise TaskUnavailableError("the collector's seal key is of low order: refused")
    return task


def _max_age(response: Response) -> float:
    match = _MAX_AGE.search(response.header("Cache-Control") or "")
    return min(float(match.group(1)), MAX_AGE_CAP) if match else DEFAULT_MAX_AGE


def _check_pinned(tasks: Iterable[TaskConfig]) -> dict[str, TaskConfig]:
    pinned: dict[str, TaskConfig] = {}
    for task in tasks:
        if not isinstance(task, TaskConfig):
            raise ConfigurationError(
                f"tasks must hold shared.TaskConfig objects, got {type(task).__name__}"
            )
        if task.task_id in pinned:
            raise ConfigurationError(f"task {task.task_id!r} is pinned twice")
        if task.seal is not None and not sealable(task.seal.public_key):
            raise ConfigurationError(f"task {task.task_id!r}: its seal key is of low order")
        pinned[task.task_id] = task
    return pinned
