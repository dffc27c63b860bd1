"""The process-wide default client behind ``client.init/record/flush/close``.

Before :func:`init` (and after :func:`close`) the functions do nothing and return
False/True, so library code can call ``client.record`` unconditionally and leave the
choice of collector, and whether to collect at all, to the application.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from ldp_telemetry.client.client import Client

_lock = threading.Lock()
_default: Client | None = None


def init(endpoint: str | None = None, **options: Any) -> Client:
    """Create the default client (closing a previous one); arguments as for :class:`Client`.

    Raises :class:`client.ConfigurationError` for bad settings, like the constructor.
    """
    global _default
    new = Client(endpoint, **options)
    with _lock:
        old, _default = _default, new
    if old is not None:
        old.close()
    return new


def get_client() -> Client | None:
    """Return the default client, or None before :func:`init`."""
    return _default


def record(task_id: str, value: Any, dimensions: Mapping[str, str] | None = None) -> bool:
    """Record with the default client; False (nothing done) before :func:`init`."""
    current = _default
    return current.record(task_id, value, dimensions) if current is not None else False


def wait_for_tasks(task_ids: Iterable[str] | None = None, timeout: float = 10.0) -> bool:
    """Wait until the default client knows these tasks (see Client.wait_for_tasks)."""
    current = _default
    return current.wait_for_tasks(task_ids, timeout) if current is not None else False


def flush(timeout: float = 5.0) -> bool:
    """Flush the default client; True if there is none."""
    current = _default
    return current.flush(timeout) if current is not None else True


def close(timeout: float = 5.0) -> bool:
    """Close and forget the default client; True if there is none."""
    global _default
    with _lock:
        current, _default = _default, None
    return current.close(timeout) if current is not None else True
