"""One read of every slice (read_slices), on both stores: the totals bit for bit those of a
task without dimensions fed the same reports, each slice (and any set of them) exactly its
reports' accumulator, a slice holding only staged reports, a slice with no report in the
range; and the fold threshold that grows with the slices a task stages in."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

from ldp_telemetry.aggregator.store import StoredTask, base
from ldp_telemetry.aggregator.store.base import SqlStore
from ldp_telemetry.shared import TaskConfig
from tests.aggregator.slices.test_store_slices import Sent, fill, tasks
from tests.aggregator.store.cases import dense_sums, kind_reports
from tests.aggregator.stores import Stores
from tests.support.reports import envelopes

STAGED_ONLY, LATE = 7, 2  # a slice whose reports stay staged; one only after the window


def send(
    store: SqlStore,
    sliced: TaskConfig,
    plain: TaskConfig,
    slice_index: int,
    bucket: int,
    rng: np.random.Generator,
) -> Sent:
    """Upload 9 reports of one slice to the task and to its twin without dimensions."""
    reports = kind_reports(sliced, 9, rng)
    made = [replace(e, slice=slice_index) for e in envelopes(sliced, reports, bucket)]
    store.add_reports(sliced, made, [0] * len(made))
    store.add_reports(plain, envelopes(plain, reports, bucket), [0] * len(made))
    return [(bucket, slice_index, r) for r in reports]


@pytest.mark.parametrize("kind", ["rr", "grr", "oue", "cms", "numeric"])
def test_one_read_holds_every_slice_and_the_totals_bit_for_bit(
    stores: Stores, backend: str, kind: str
) -> None:
    rng = np.random.default_rng(17)
    store = stores.open(backend, staged_bytes=1 << 30)  # folds only when asked
    sliced, plain = tasks(kind)
    for task in (sliced, plain):
        store.create_task(StoredTask(task))
    sent = fill(store, sliced, plain, rng, 60)  # slices 0, 4, 5 and 11 over 4 buckets
    first, step = sliced.floor_time(1.7e9), sliced.time_precision
    sent += send(store, sliced, plain, LATE, first + 5 * step, rng)
    for task in (sliced, plain):
        store.fold_staged(task)
    sent += send(store, sliced, plain, STAGED_ONLY, first, rng)  # staged, never folded
    for start, end in [(None, None), (first, first + 4 * step)]:  # every bucket; a cut
        inside = [
            (s, r) for b, s, r in sent if (start is None or b >= start) and (end is None or b < end)
        ]
        with (
            store.read_slices(sliced, start, end) as read,
            store.read_sums(plain, start, end) as twin,
        ):
            totals = read.sums()
            assert totals.total == twin.total == len(inside)
            assert np.array_equal(totals.n, twin.n)
            assert np.array_equal(totals.table[:], twin.table[:])
            assert read.counts == dict(sorted(Counter(s for s, _ in inside).items()))
            assert read.counts == store.slice_counts(sliced, start, end)
            assert read.counts[STAGED_ONLY] == 9
            assert (LATE in read.counts) == (end is None)
            added_n, added_table = np.zeros_like(twin.n), np.zeros_like(twin.table[:])
            for index in range(sliced.slice_count):  # used or not, each exactly its reports
                alone = read.sums([index])
                dense = dense_sums(sliced, [r for s, r in inside if s == index])
                assert alone.total == dense.total
                assert np.array_equal(alone.n, dense.n)
                assert np.array_equal(alone.table[:], dense.table)
                added_n, added_table = added_n + alone.n, added_table + alone.table[:]
            assert np.array_equal(added_n, twin.n)  # the slices add up to the totals
            assert np.array_equal(added_table, twin.table[:])
            pooled = read.sums([11, STAGED_ONLY, 4, 11])  # a set of slices (a rolled-up row)
            dense = dense_sums(sliced, [r for s, r in inside if s in (4, 11, STAGED_ONLY)])
            assert pooled.total == dense.total
            assert np.array_equal(pooled.table[:], dense.table)
            assert read.sums([]).total == 0
            with pytest.raises(ValueError):
                read.sums([sliced.slice_count])


def test_the_fold_threshold_grows_with_the_slices_staged_in(
    stores: Stores, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(base, "FOLD_SLICES", 8)  # under the test task's 12 slices
    store = stores.open(backend, staged_bytes=1 << 30)
    sliced, plain = tasks("cms")
    for task in (sliced, plain):
        store.create_task(StoredTask(task))
    rng = np.random.default_rng(3)
    bucket = sliced.floor_time(1.7e9)
    assert store.fold_threshold(sliced) == store.staged_bytes  # nothing staged yet
    for index, distinct in [(0, 1), (4, 2), (4, 2), (5, 3)]:
        send(store, sliced, plain, index, bucket, rng)
        assert store.fold_threshold(sliced) == store.staged_bytes * distinct
    for index in range(sliced.slice_count):
        send(store, sliced, plain, index, bucket, rng)
    assert sliced.slice_count > base.FOLD_SLICES
    assert store.fold_threshold(sliced) == store.staged_bytes * base.FOLD_SLICES  # bounded
    assert store.fold_threshold(plain) == store.staged_bytes  # one slice


def test_a_read_sees_one_snapshot_whatever_commits_meanwhile(stores: Stores, backend: str) -> None:
    rng = np.random.default_rng(9)
    store = stores.open(backend, staged_bytes=1)  # every upload folds: rows rewritten meanwhile
    sliced, plain = tasks("cms")
    for task in (sliced, plain):
        store.create_task(StoredTask(task))
    bucket = sliced.floor_time(1.7e9)
    before = send(store, sliced, plain, 4, bucket, rng) + send(store, sliced, plain, 5, bucket, rng)
    store.fold_staged(sliced)
    with store.read_slices(sliced, None, None) as read:
        # another thread commits (and folds) more reports of both slices before any row is read
        writer = threading.Thread(
            target=lambda: [send(store, sliced, plain, i, bucket, rng) for i in (4, 5)]
        )
        writer.start()
        writer.join()
        for index in (4, 5):
            alone = read.sums([index])
            dense = dense_sums(sliced, [r for _, s, r in before if s == index])
            assert alone.total == dense.total == 9
            assert np.array_equal(alone.table[:], dense.table)
    with store.read_slices(sliced, None, None) as later:
        assert later.counts == {4: 18, 5: 18}
