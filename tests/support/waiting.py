"""A bounded wait for a condition another thread or process makes true."""

from __future__ import annotations

import time
from collections.abc import Callable

WAIT = 30.0  # s: bound on a wait that ends at once when the code is right


def wait_until(condition: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    """Return once ``condition()`` holds; fail saying ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)
