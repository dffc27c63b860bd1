"""Upload keys and task ids at the shuffler: it refuses the uploads the collector would.

The collector does not ask a shuffled batch for the task's upload key (the shuffler strips
every device header), so the shuffler checks each upload's ``Authorization`` against the
SHA-256 the collector gives a shuffler token (``GET /v1/tasks/{id}/upload-key``), with the
collector's own check and 401. Without this, anyone reaching a shuffler could report to a
keyed task, and the key would bound fake devices nowhere.

The same question tells it which task ids exist: an upload to an unknown task gets the
collector's 404 ``unknown_task`` instead of holding spool room for days (anyone could fill
the spool so). Answers are kept for ``ttl`` seconds (``unknown_ttl`` for an unknown id, so a
task created meanwhile is soon served), at most ``MAX_TASKS`` task ids. When the collector
cannot be asked, the last answer stands; with none, the upload gets 503
``upstream_unavailable`` with Retry-After: a key that cannot be checked is not passed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from urllib.parse import quote

import requests

from ldp_telemetry.aggregator.core.auth import check_upload_key, parse_bearer
from ldp_telemetry.aggregator.core.problems import ApiError
from ldp_telemetry.aggregator.core.tasks import unknown_task
from ldp_telemetry.shared.contract import (
    UNKNOWN_TASK,
    UPLOAD_KEY_PATH,
    UPSTREAM_UNAVAILABLE,
    fill,
    problem_code,
)

log = logging.getLogger("ldp.shuffler")
MAX_TASKS = 4096  # task ids remembered; an upload to an unseen id asks the collector
TIMEOUT = (2, 5)  # seconds to connect, to read: a device's upload waits for this
UNKNOWN = "unknown task"  # cached in place of a digest: the collector answered 404


class UploadKeys:
    """The collector's upload-key digests per task, cached; ``check`` refuses as it would."""

    def __init__(
        self,
        upstream: str,
        token: str,
        *,
        ttl: float = 60.0,
        unknown_ttl: float = 5.0,
        retry_after: int = 5,
    ) -> None:
        self.upstream, self.token, self.retry_after = upstream, token, retry_after
        self.ttl, self.unknown_ttl = ttl, unknown_ttl
        self.session = requests.Session()
        self._known: OrderedDict[str, tuple[float, str | None]] = OrderedDict()
        self._lock = threading.Lock()

    def check(self, task_id: str, authorization: str | None) -> None:
        """Raise the collector's 404 for an unknown task, its 401 when the task needs a key
        the upload does not carry."""
        digest = self.digest(task_id)
        if digest == UNKNOWN:
            raise unknown_task(task_id)
        check_upload_key(digest, parse_bearer(authorization))

    def digest(self, task_id: str) -> str | None:
        """Return the SHA-256 of the task's upload key (None: none; UNKNOWN: no such task)."""
        with self._lock:
            cached = self._known.get(task_id)
        if cached is not None:
            ttl = self.unknown_ttl if cached[1] == UNKNOWN else self.ttl
            if time.monotonic() - cached[0] < ttl:
                return cached[1]
        try:
            answer = self.session.get(
                self.upstream + fill(UPLOAD_KEY_PATH, task_id=quote(task_id, safe="")),
                headers={"Authorization": f"Bearer {self.token}"},
                timeout=TIMEOUT,
            )
        except requests.RequestException:
            return self._stale(task_id, cached, "cannot reach the collector")
        if answer.status_code == 404 and _problem_code(answer) == UNKNOWN_TASK:
            digest: str | None = UNKNOWN  # the collector would refuse its reports
        elif answer.status_code == 200:
            digest = answer.json().get("upload_key_sha256")
        else:  # e.g. 403: this shuffler's token is not a shuffler token
            log.error(
                "ldp-shuffler: the collector answered %d to an upload-key request",
                answer.status_code,
            )
            return self._stale(task_id, cached, f"the collector answered {answer.status_code}")
        with self._lock:
            self._known[task_id] = (time.monotonic(), digest)
            self._known.move_to_end(task_id)
            while len(self._known) > MAX_TASKS:
                self._known.popitem(last=False)
        return digest

    def _stale(self, task_id: str, cached: tuple[float, str | None] | None, why: str) -> str | None:
        if cached is not None:
            return cached[1]
        error = ApiError(
            503,
            UPSTREAM_UNAVAILABLE,
            f"{why}: the task's upload key cannot be checked now; retry later",
        )
        error.headers["Retry-After"] = str(self.retry_after)
        raise error


def _problem_code(answer: requests.Response) -> str:
    """Return a problem document's code ("" if the body is not one)."""
    try:
        return problem_code(answer.json())
    except ValueError:
        return ""
