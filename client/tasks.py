"""Where the client gets each task's public configuration: pinned, cached or fetched.

A task is fetched with ``GET /v1/tasks/{id}`` the first time ``record`` sees it, on the
caller's thread and bounded by ``Timeouts.config`` (the only network wait ``record`` can
ever have, once per task). After that the cached configuration is used at once; the
uploader thread revalidates it in the background when its ``max-age`` has passed
(``If-None-Match`` with the ETag, a 304 keeps it) and retries failed fetches every
``RETRY_FAILED`` seconds. A stale configuration stays in use while the server is
unreachable. The answer is checked: a valid task with the asked id and a fingerprint
matching its parameters, else it is refused.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from client.errors import ConfigurationError, TaskUnavailableError, TransportError
from client.problems import ProblemLog
from client.transport import Request, Response, Transport
from shared.errors import LdpError
from shared.task import TASK_ID, TaskConfig

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
    """Task configurations by id; thread-safe."""

    def __init__(self, transport: Transport, *, pinned: Iterable[TaskConfig] = (),
                 timeout: float, problems: ProblemLog,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._transport = transport
        self._timeout = timeout
        self._problems = problems
        self._clock = clock
        self._pinned = _check_pinned(pinned)
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()

    def after_fork(self) -> None:
        """Replace the lock (another thread may have held it at fork time)."""
        self._lock = threading.Lock()

    def get(self, task_id: str) -> TaskConfig | None:
        """Return the task's configuration, fetching it on first use; None if unavailable."""
        pinned = self._pinned.get(task_id)
        if pinned is not None:
            return pinned
        entry = self._entries.get(task_id)
        if entry is None:
            with self._lock:  # one thread fetches; others wait, bounded by its timeout
                entry = self._entries.get(task_id) or self._fetch(task_id, None)
        return entry.task

    def refresh_due(self) -> None:
        """Revalidate stale configurations and retry failed fetches (uploader thread)."""
        now = self._clock()
        for task_id, entry in list(self._entries.items()):
            if now >= entry.due:
                with self._lock:
                    self._fetch(task_id, entry)

    def invalidate(self, task_id: str) -> None:
        """Make the next refresh revalidate a task (the server said it is outdated)."""
        entry = self._entries.get(task_id)
        if entry is not None:
            entry.due = 0.0

    def _fetch(self, task_id: str, old: _Entry | None) -> _Entry:
        try:
            entry = self._request(task_id, old)
        except (TaskUnavailableError, TransportError) as error:
            self._problems.report(f"task:{task_id}", "ldp-telemetry: task %r is unavailable "
                                  "(%s); its records are dropped until it is", task_id, error)
            entry = _Entry(old.task if old else None, old.etag if old else None,
                           self._clock() + RETRY_FAILED)
        self._entries[task_id] = entry
        return entry

    def _request(self, task_id: str, old: _Entry | None) -> _Entry:
        if not TASK_ID.fullmatch(task_id):
            raise TaskUnavailableError("not a valid task id")
        headers = {"Accept": "application/json"}
        if old is not None and old.etag and old.task is not None:
            headers["If-None-Match"] = old.etag
        try:
            response = self._transport.handle(Request("GET", f"/v1/tasks/{task_id}", headers),
                                              timeout=self._timeout)
        except TransportError:
            raise
        except Exception as error:  # a broken custom transport must not reach the app
            raise TaskUnavailableError(f"transport raised {type(error).__name__}") from None
        due = self._clock() + _max_age(response)
        if response.status == 304 and old is not None and old.task is not None:
            return _Entry(old.task, old.etag, due)
        if response.status != 200:
            raise TaskUnavailableError(f"the server answered {response.status}")
        return _Entry(_parse_task(task_id, response), response.header("ETag"), due)


def _parse_task(task_id: str, response: Response) -> TaskConfig:
    try:
        task = TaskConfig.from_dict(json.loads(response.body))
    except (ValueError, LdpError, TypeError):
        raise TaskUnavailableError("the server's task configuration is invalid") from None
    if task.task_id != task_id:
        raise TaskUnavailableError(f"the server answered task {task.task_id!r}")
    return task


def _max_age(response: Response) -> float:
    match = _MAX_AGE.search(response.header("Cache-Control") or "")
    return min(float(match.group(1)), MAX_AGE_CAP) if match else DEFAULT_MAX_AGE


def _check_pinned(tasks: Iterable[TaskConfig]) -> dict[str, TaskConfig]:
    pinned: dict[str, TaskConfig] = {}
    for task in tasks:
        if not isinstance(task, TaskConfig):
            raise ConfigurationError(
                f"tasks must hold shared.TaskConfig objects, got {type(task).__name__}")
        if task.task_id in pinned:
            raise ConfigurationError(f"task {task.task_id!r} is pinned twice")
        pinned[task.task_id] = task
    return pinned
