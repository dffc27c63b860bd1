"""CPU-time medians: robust to other processes on the machine, and "per core" by nature."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def cpu_median(action: Callable[[], Any], repeats: int, warmup: bool = False) -> float:
    """Return the median CPU seconds of this process running ``action`` ``repeats`` times.

    ``warmup`` runs it once untimed first: e.g. the first addition into a fresh k=65536
    table pays for zeroing 512 MiB of pages, which a running server has long paid.
    """
    if warmup:
        action()
    times = []
    for _ in range(max(1, repeats)):
        started = time.process_time()
        action()
        times.append(time.process_time() - started)
    return statistics.median(times)


def wall_seconds(action: Callable[[], Any]) -> float:
    """Return the wall-clock seconds ``action`` takes (for work spread over processes)."""
    started = time.perf_counter()
    action()
    return time.perf_counter() - started
