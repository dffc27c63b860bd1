"""The central epsilon an estimate's reports carry when they came through a shuffler.

Every report of the window must have reached the collector in a shuffled batch (recorded by
ldp_telemetry.aggregator.api.shuffled); the weakest guarantee among them is that of the smallest
batch, so the answer is the shuffle accountant's ε for n = the smallest batch's distinct uploads,
with the task's mechanism-aware reduction (ldp_telemetry.shared.shuffling.amplification). Otherwise
the answer says why there is none.
"""

from __future__ import annotations

import functools
from collections.abc import Collection
from typing import Any

from ldp_telemetry.aggregator.core.analysis.query import Window
from ldp_telemetry.aggregator.store import ShuffledWindow
from ldp_telemetry.shared import TaskConfig
from ldp_telemetry.shared.answers import Central
from ldp_telemetry.shared.shuffling.amplification import Reduction, reduction_of

DEFAULT_DELTA = 1e-8
NO_BATCH = "no shuffled batch is recorded for this range: its reports came in directly"
NO_SLICE_COUNTS = (
    "the shuffled batches of this range record no count per slice, and a device hides only "
    "among its slice's reports (its dimensions are public)"
)


def central_fields(
    task: TaskConfig,
    source: Any,
    window: Window,
    n: int,
    slices: Collection[int] | None = None,
    delta: float = DEFAULT_DELTA,
) -> Central:
    """Return ``central_epsilon``, ``delta``, ``smallest_batch`` (and, when there is no
    central epsilon, ``central_epsilon_reason``) for an estimate over ``window`` of the
    reports of ``slices`` (None: every slice)."""
    read = getattr(source, "shuffled_window", None)  # a sums file keeps no batches
    shuffled: ShuffledWindow | None = None if read is None else read(task, window.start, window.end)
    if shuffled is None or shuffled.smallest is None:
        # The same words for a sums file: an answer should not depend on where sums came from.
        return _none(delta, NO_BATCH)
    if task.dimensions is not None:
        # A device hides only among its own slice's reports in a batch (its dimensions are
        # public): the batch's size says nothing of that, and no per-slice count is kept.
        return _none(delta, NO_SLICE_COUNTS, shuffled.smallest)
    if shuffled.reports < n:
        return _none(
            delta,
            f"{n - shuffled.reports} of the {n} reports in this range bypassed the shuffler",
            shuffled.smallest,
        )
    epsilon = _epsilon(reduction_of(task.mechanism_object), shuffled.smallest, delta)
    return {"central_epsilon": epsilon, "delta": delta, "smallest_batch": shuffled.smallest}


@functools.lru_cache(maxsize=1024)
def _epsilon(reduction: Reduction, n: int, delta: float) -> float:
    from ldp_telemetry.shared.shuffling.accountant import (
        central_epsilon,  # scipy: only when answering
    )

    return central_epsilon(reduction, n, delta)


def _none(delta: float, reason: str, smallest: int | None = None) -> Central:
    return {
        "central_epsilon": None,
        "delta": delta,
        "smallest_batch": smallest,
        "central_epsilon_reason": reason,
    }
