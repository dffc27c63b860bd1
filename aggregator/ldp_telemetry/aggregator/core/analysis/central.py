"""The central epsilon an estimate's reports carry when they came through a shuffler.

Every report of the window must have reached the collector in a shuffled batch (recorded by
ldp_telemetry.aggregator.api.shuffled); the weakest guarantee among them is that of the smallest
batch, so the answer is the shuffle accountant's ε for n = the smallest batch's distinct uploads,
with the task's mechanism-aware reduction (ldp_telemetry.shared.shuffling.amplification). Otherwise
the answer says why there is none.

With dimensions, a batch protects a device only among the reports of its own slice: an attacker
who knows its dimensions (they are public) looks at nothing else. The shuffler counts each
slice's distinct uploads in every batch, and a set of slices (one row of a breakdown, or the
task's totals: every slice with reports) gets the accountant's ε at the smallest count any of
them had in a batch holding it — the weakest device's guarantee among the row's.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable
from typing import Any

from ldp_telemetry.aggregator.core.analysis.query import Window
from ldp_telemetry.aggregator.store import ShuffledWindow
from ldp_telemetry.shared import TaskConfig
from ldp_telemetry.shared.answers import Central
from ldp_telemetry.shared.shuffling.amplification import Reduction, reduction_of

DEFAULT_DELTA = 1e-8
NO_BATCH = "no shuffled batch is recorded for this range: its reports came in directly"
NO_SLICE_COUNTS = (
    "a slice of these reports has no count in the shuffled batches of this range, and a "
    "device hides only among its slice's reports (its dimensions are public)"
)


class Shuffle:
    """A window's shuffled batches, read once for an answer and all its rows, the window's
    reports (the totals' n: a row is shuffled only if every report of the window is) and
    the slices holding them (the totals' slices)."""

    def __init__(
        self, task: TaskConfig, source: Any, window: Window, reports: int, held: Iterable[int]
    ) -> None:
        read = getattr(source, "shuffled_window", None)  # a sums file keeps no batches
        self.batches: ShuffledWindow | None = (
            None if read is None else read(task, window.start, window.end)
        )
        self.task, self.reports, self.held = task, reports, list(held)


def central_fields(
    shuffle: Shuffle, n: int, slices: Collection[int] | None = None, delta: float = DEFAULT_DELTA
) -> Central:
    """Return ``central_epsilon``, ``delta``, ``smallest_batch`` (and, when there is no
    central epsilon, ``central_epsilon_reason``) for ``n`` reports of the window, those of
    ``slices`` (None: every slice, the totals)."""
    task, batches = shuffle.task, shuffle.batches
    if batches is None or batches.smallest is None:
        # The same words for a sums file: an answer should not depend on where sums came from.
        return _none(delta, NO_BATCH)
    if batches.reports < shuffle.reports:
        return _none(
            delta,
            f"{shuffle.reports - batches.reports} of the {shuffle.reports} reports in this "
            "range bypassed the shuffler",
            batches.smallest,
        )
    smallest = batches.smallest
    if task.dimensions is not None:
        counted = batches.slice_smallest()
        held = shuffle.held if slices is None else list(slices)
        if any(index not in counted for index in held):
            return _none(delta, NO_SLICE_COUNTS, batches.smallest)
        smallest = min(counted[index] for index in held)
    epsilon = _epsilon(reduction_of(task.mechanism_object), smallest, delta)
    return {"central_epsilon": epsilon, "delta": delta, "smallest_batch": smallest}


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
