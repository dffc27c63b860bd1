"""Upload quotas: a token bucket of reports per task, refilled at a steady rate.

A task (and so its upload key, which belongs to one task) may upload ``QUOTA_RATE``
reports per second on average with bursts up to ``QUOTA_BURST``; past that an upload is
refused whole with ``429 too_many_requests`` and a ``Retry-After`` that says when the
bucket will hold enough. The buckets live in each worker process, so no request pays for
shared state: ``serve --workers N`` gives each worker 1/N of both numbers (``LDP_WORKERS``),
which bounds the collector's total at the configured figures. ``QUOTA_RATE = 0`` turns
quotas off. The defaults are generous: they stop a runaway or hostile sender, not a
fleet of devices (at 100,000 reports per second a task takes 8.6 billion reports a day;
the collector's own ceiling on 2 cores is below that, see docs/performance.md).
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ldp_telemetry.aggregator.core.problems import ApiError
from ldp_telemetry.shared.contract import TOO_MANY_REQUESTS


@dataclass
class _Bucket:
    tokens: float
    updated: float


class Quotas:
    """Token buckets by key; thread-safe."""

    def __init__(
        self, rate: float, burst: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate, self.burst, self._clock = rate, burst, clock
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()

    def take(self, key: str, amount: int) -> float:
        """Take ``amount`` tokens; return 0, or the seconds to wait (nothing taken)."""
        if self.rate <= 0:
            return 0.0
        now = self._clock()
        with self._lock:
            bucket = self._buckets.setdefault(key, _Bucket(self.burst, now))
            bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.updated) * self.rate)
            bucket.updated = now
            if amount > self.burst:  # could never pass: say how long a full bucket takes
                return max(1.0, (amount - bucket.tokens) / self.rate)
            if bucket.tokens >= amount:
                bucket.tokens -= amount
                return 0.0
            return (amount - bucket.tokens) / self.rate


def init_app(quota_rate: float, quota_burst: float) -> Quotas:
    """Return this process's quotas (each of N workers gets 1/N of the rate and burst)."""
    workers = max(1, int(os.environ.get("LDP_WORKERS", "1") or 1))
    return Quotas(quota_rate / workers, quota_burst / workers)


def charge(quotas: Quotas | None, task_id: str, reports: int) -> None:
    """Count an upload's reports against its task's quota, or raise the 429 problem."""
    if quotas is None or reports <= 0:
        return
    wait = quotas.take(task_id, reports)
    if wait > 0:
        error = ApiError(
            429,
            TOO_MANY_REQUESTS,
            f"task {task_id!r} is over its upload quota ({quotas.rate:g} "
            f"reports/s per worker, bursts of {quotas.burst:g}); retry after "
            "the Retry-After delay",
            retry_after=math.ceil(wait),
        )
        error.headers["Retry-After"] = str(math.ceil(wait))
        raise error
