"""Log each kind of failure once, so a failing SDK never floods the host's logs.

(Not the collector's RFC 9457 problem documents: those are answers on the wire.) Messages
name the task and the kind of failure, never a recorded value: callers pass
only task ids, counts, status codes and exception type names.
"""

from __future__ import annotations

import logging
import threading

logger = logging.getLogger("ldp_telemetry.client")


class LogOnce:
    """Warn the first time a kind of failure happens; later repeats go to debug."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: set[str] = set()

    def after_fork(self) -> None:
        """Replace the lock (another thread may have held it at fork time)."""
        self._lock = threading.Lock()

    def report(self, kind: str, message: str, *args: object) -> None:
        """Log ``message % args`` as a warning if ``kind`` is new, else at debug level."""
        with self._lock:
            first = kind not in self._seen
            self._seen.add(kind)
        logger.log(logging.WARNING if first else logging.DEBUG, message, *args)
