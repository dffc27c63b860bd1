"""Sums per slice, on both stores: each slice's read is exactly its reports' accumulator,
the totals are the sum over slices and bit for bit those of a task without dimensions fed
the same reports, and slice_counts counts every report once."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

from ldp_telemetry.aggregator.store import StoredTask
from ldp_telemetry.aggregator.store.base import SqlStore
from ldp_telemetry.shared import TaskConfig
from ldp_telemetry.shared.codec import Payload
from tests.aggregator.store.cases import CASES, dense_sums, kind_reports
from tests.aggregator.stores import Stores
from tests.support.reports import envelopes

DIMENSIONS = [
    {"name": "platform", "values": ["android", "ios", "web"]},
    {"name": "app_version", "values": ["5.1", "5.2"]},
]
BUCKETS = 4
Sent = list[tuple[int, int, Payload]]  # (bucket, slice, report)


def tasks(kind: str) -> tuple[TaskConfig, TaskConfig]:
    """Return a task of ``kind`` with dimensions and its twin without (one hash seed)."""
    sliced = TaskConfig.create(
        task_id=f"s-{kind}", mechanism=kind, min_batch_size=1, dimensions=DIMENSIONS,
        **CASES[kind].fields,
    )  # fmt: skip
    fields = {k: v for k, v in sliced.params.to_fields().items() if k != "mechanism"}
    plain = TaskConfig(task_id=f"p-{kind}", mechanism=kind, min_batch_size=1, **fields)
    return sliced, plain


def fill(
    store: SqlStore, sliced: TaskConfig, plain: TaskConfig, rng: np.random.Generator, count: int
) -> Sent:
    """Upload the same reports to both tasks, a few at a time (slices: a few used, unevenly)."""
    first, step = sliced.floor_time(1.7e9), sliced.time_precision
    used = [0, 4, 5, 11]  # android 5.1, ios 5.1, ios 5.2, other other
    sent: Sent = []
    reports = kind_reports(sliced, count, rng)
    for start in range(0, count, 7):
        part = reports[start : start + 7]
        bucket = first + step * int(rng.integers(BUCKETS))
        chosen = [used[int(i)] for i in rng.integers(len(used), size=len(part))]
        made = envelopes(sliced, part, bucket)
        sliced_envelopes = [replace(e, slice=s) for e, s in zip(made, chosen, strict=True)]
        store.add_reports(sliced, sliced_envelopes, [0] * len(part))
        store.add_reports(plain, envelopes(plain, part, bucket), [0] * len(part))
        sent += [(bucket, s, r) for s, r in zip(chosen, part, strict=True)]
    return sent


def assert_read(
    store: SqlStore,
    task: TaskConfig,
    sent: Sent,
    window: tuple[int | None, int | None],
    slices: list[int] | None,
) -> None:
    """Assert that a read of a window and some slices equals the accumulator of its reports."""
    start, end = window
    inside = [
        r
        for b, s, r in sent
        if (start is None or b >= start)
        and (end is None or b < end)
        and (slices is None or s in slices)
    ]
    dense = dense_sums(task, inside)
    rows = task.mechanism_object.sums_shape[0]
    with store.read_slices(task, start, end) as sliced:
        sums = sliced.sums(slices)
        assert sums.total == len(inside)
        assert np.array_equal(sums.n, dense.n)
        assert np.array_equal(sums.table[0:rows], dense.table)


@pytest.mark.parametrize("kind", ["rr", "grr", "cms", "hh", "numeric"])
@pytest.mark.parametrize("staged_bytes", [1, 1 << 30], ids=["fold-often", "fold-on-read"])
def test_slices_add_up_to_the_totals_of_a_task_without_dimensions(
    stores: Stores, backend: str, kind: str, staged_bytes: int
) -> None:
    rng = np.random.default_rng(38)
    store = stores.open(backend, staged_bytes=staged_bytes)
    sliced, plain = tasks(kind)
    for task in (sliced, plain):
        store.create_task(StoredTask(task))
    sent = fill(store, sliced, plain, rng, 90)
    buckets = sorted({b for b, _, _ in sent})
    cut = (buckets[1], None)  # a window that is not every stored bucket: read per bucket
    for window in [(None, None), cut]:
        with store.read_sums(sliced, *window) as totals, store.read_sums(plain, *window) as twin:
            assert totals.total == twin.total
            assert np.array_equal(totals.n, twin.n)
            assert np.array_equal(totals.table[:], twin.table[:])
        assert_read(store, sliced, sent, window, None)
        for slice_index in range(sliced.slice_count):  # used or not
            assert_read(store, sliced, sent, window, [slice_index])
        assert_read(store, sliced, sent, window, [4, 11])
        assert_read(store, sliced, sent, window, [])
        counts = store.slice_counts(sliced, *window)
        inside = [s for b, s, _ in sent if window[0] is None or b >= window[0]]
        assert counts == dict(sorted(Counter(inside).items()))
        assert sum(counts.values()) == len(inside)
        assert store.slice_counts(plain, *window) == {0: len(inside)}
    more = fill(store, sliced, plain, rng, 20)  # folds after reads keep every slice exact
    assert_read(store, sliced, sent + more, (None, None), [5])
    exported = Counter(s for _, s, _, _, _ in store.sum_rows(sliced))
    assert set(exported) == {s for _, s, _ in sent + more}


def test_a_slice_the_task_does_not_have_is_refused(stores: Stores, backend: str) -> None:
    store = stores.open(backend)
    sliced, plain = tasks("rr")
    store.create_task(StoredTask(sliced))
    assert store.slice_counts(sliced, None, None) == {}
    for bad in ([12], [-1], [True]):
        with store.read_slices(sliced, None, None) as read, pytest.raises(ValueError):
            read.sums(bad)
    with store.read_slices(plain, None, None) as read, pytest.raises(ValueError):
        read.sums([1])
