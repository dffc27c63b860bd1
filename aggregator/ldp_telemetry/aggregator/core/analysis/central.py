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

Over the window a device is in at most one batch per time bucket (the SDK's default
``reports_per_period`` is 1, and its period is the task's bucket), so its central guarantee
over the window is the composition of one pair per bucket: the bucket's weakest batch (or
slice count), each at the accountant's ε (:mod:`ldp_telemetry.shared.shuffling.composition`).
Beyond 16 distinct sizes each batch's n is first rounded down to a power of 2^(1/32) (ε falls
as n grows, so this only errs towards privacy, by about 1%), so that a year of daily batches
needs a few dozen runs of the accountant at most, not one per batch. A longitudinal task gets
no such composition: its reports on different days share the device's permanent response, so
they are not independent mechanisms of the value, and the per-batch bounds (of the value's
whole channel) do not compose by any theorem used here; its local lifetime bound holds.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Collection, Iterable
from dataclasses import replace
from typing import Any

from ldp_telemetry.aggregator.core.analysis.query import Window
from ldp_telemetry.aggregator.store import ShuffledWindow
from ldp_telemetry.shared import TaskConfig
from ldp_telemetry.shared.answers import Central, CentralLifetime
from ldp_telemetry.shared.mechanisms.features import longitudinal
from ldp_telemetry.shared.shuffling.amplification import Reduction, generic, reduction_of

DEFAULT_DELTA = 1e-8
EXACT_SIZES = 16  # a lifetime with more distinct batch sizes rounds them down to a grid:
GRID = 32  # whole powers of 2^(1/GRID)
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
    """Return ``central_epsilon``, ``delta``, ``smallest_batch`` and the ``lifetime``
    composition (or, when there is no central epsilon, ``central_epsilon_reason``) for ``n``
    reports of the window, those of ``slices`` (None: every slice, the totals)."""
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
    smallest, held = batches.smallest, None
    if task.dimensions is not None:
        counted = batches.slice_smallest()
        held = shuffle.held if slices is None else list(slices)
        if any(index not in counted for index in held):
            return _none(delta, NO_SLICE_COUNTS, batches.smallest)
        smallest = min(counted[index] for index in held)
    reduction = reduction_of(task.mechanism_object)
    answer: Central = {
        "central_epsilon": _epsilon(reduction, smallest, delta),
        "delta": delta,
        "smallest_batch": smallest,
    }
    weakest = _weakest(batches, held)
    if weakest and longitudinal(task.mechanism_object) is None:
        rounded = len(set(weakest)) > EXACT_SIZES
        sizes = [batch_floor(n) if rounded else n for n in weakest]
        answer["lifetime"] = _lifetime([_epsilon(reduction, n, delta) for n in sizes], delta)
    return answer


def _weakest(batches: ShuffledWindow, held: list[int] | None) -> list[int]:
    """Return, per time bucket with a batch, the smallest n a device had there: the batch's
    size, or with dimensions (``held``: the answer's slices) its slice's own count."""
    if held is None:
        counts: list[int | None] = list(batches.sizes)
    else:
        counts = []
        for by_slice in batches.slice_counts:
            mine = [by_slice[index] for index in held if index in by_slice]
            counts.append(min(mine) if mine else None)  # None: no device of these slices
    if len(batches.buckets) != len(counts):
        return []  # a source that keeps no batch's bucket: nothing to compose by
    weakest: dict[int, int] = {}
    for bucket, count in zip(batches.buckets, counts, strict=True):
        if count is not None:
            weakest[bucket] = min(count, weakest.get(bucket, count))
    return list(weakest.values())


def _lifetime(epsilons: list[float], delta: float) -> CentralLifetime:
    """Return the composition of batches at ``epsilons``, each at ``delta``."""
    from ldp_telemetry.shared.shuffling.composition import lifetime_delta

    total = lifetime_delta([delta] * len(epsilons))
    return {
        "batches": len(epsilons),
        "delta": total,
        "epsilon": _composed(tuple(sorted(epsilons)), delta, total),
        "naive_epsilon": math.fsum(epsilons),
    }


@functools.lru_cache(maxsize=256)
def _composed(epsilons: tuple[float, ...], delta: float, total: float) -> float:
    from ldp_telemetry.shared.shuffling.composition import compose  # dp-accounting

    return compose([(epsilon, delta) for epsilon in epsilons], total)


def batch_floor(n: int) -> int:
    """Return the largest whole power of 2^(1/32), rounded down, not above n (at least 1)."""
    power = math.floor(math.log2(n) * GRID)
    while power > 0 and math.floor(2.0 ** (power / GRID)) > n:
        power -= 1
    return max(1, math.floor(2.0 ** (power / GRID)))


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


def planned_lifetime(
    epsilon0: float, batch_size: int, batches: int, delta: float = DEFAULT_DELTA
) -> dict[str, Any]:
    """Return a device's central ε over ``batches`` batches of ``batch_size`` reports each of
    an ε₀-LDP randomizer (the generic reduction, which every mechanism at ε₀ has): one
    batch's ``batch_epsilon`` and the ``lifetime`` composition (the planner's figures)."""
    reduction = replace(generic(epsilon0).reduction(), given_epsilon0=epsilon0)
    one = _epsilon(reduction, batch_size, delta)
    lifetime = _lifetime([one] * batches, delta)
    return {"batch_size": batch_size, "batch_epsilon": one, "batch_delta": delta, **lifetime}
