"""What both stores keep besides sums, on SQLite and PostgreSQL alike: tasks, tokens,
replays within a group commit, refusals, shuffled batches, the archive and the export."""

from __future__ import annotations

import numpy as np
import pytest

from ldp_telemetry.aggregator.store import (
    ShuffledBatch,
    ShuffledWindow,
    StoredTask,
    TaskExists,
    Upload,
)
from ldp_telemetry.aggregator.store.base import SqlStore
from ldp_telemetry.aggregator.store.staging import columns as batch_columns
from ldp_telemetry.aggregator.store.staging import stack, unpack
from ldp_telemetry.shared.mechanisms.registry import MECHANISMS
from tests.aggregator.store.cases import dense_sums, kind_reports, kind_task
from tests.aggregator.stores import Stores
from tests.support.reports import envelopes

DAY = 86_400


@pytest.fixture
def store(stores: Stores, backend: str) -> SqlStore:
    return stores.open(backend)


@pytest.mark.parametrize("kind", MECHANISMS)
def test_every_kind_is_stored_and_read_back_as_it_was(
    stores: Stores, store: SqlStore, kind: str
) -> None:
    task = StoredTask(kind_task(kind), upload_key_hash="ab" * 32, archive=True)
    store.create_task(task)
    with pytest.raises(TaskExists):
        store.create_task(StoredTask(kind_task(kind)))
    again = stores.reopen(store)  # nothing cached: read from the table
    assert again.get_task(task.config.task_id) == task
    assert again.get_task(task.config.task_id).config.fingerprint == task.config.fingerprint
    assert again.get_task("nope") is None


def test_tasks_are_listed_by_id_cached_or_not(stores: Stores, store: SqlStore) -> None:
    for kind in reversed(MECHANISMS):
        store.create_task(StoredTask(kind_task(kind)))
    listed = [t.config.task_id for t in store.list_tasks()]
    assert listed == sorted(f"t-{kind}" for kind in MECHANISMS)
    again = stores.reopen(store)
    again.get_task("t-rr")  # one cached, the others not
    assert [t.config.task_id for t in again.list_tasks()] == listed


def test_tokens_are_stored_listed_and_revoked(store: SqlStore) -> None:
    store.add_token("h1", "admin")
    store.add_token("h2", "analyst")
    assert store.token_role("h1") == "admin" and store.token_role("h3") is None
    assert [(t.token_hash, t.role) for t in store.list_tokens()] == [
        ("h1", "admin"),
        ("h2", "analyst"),
    ]
    assert store.revoke_token("h1") and not store.revoke_token("h1")
    assert store.token_role("h1") is None


def test_a_group_of_uploads_counts_each_id_once(store: SqlStore) -> None:
    task, other = kind_task("cms"), kind_task("rr")
    for each in (task, other):
        store.create_task(StoredTask(each))
    rng = np.random.default_rng(3)
    batch = envelopes(task, kind_reports(task, 6, rng), 1.7e9)
    theirs = envelopes(other, kind_reports(other, 3, rng), 1.7e9)
    store.add_reports(task, batch[:2], [0] * 2)
    replays = store.add_uploads(
        [
            Upload(task, batch[1:4], [0] * 3),  # batch[1] seen before
            Upload(other, theirs, [0] * 3),
            Upload(task, batch[3:], [0] * 3),  # batch[3] first sent by the first upload
        ]
    )
    assert replays == [{batch[1].report_id}, set(), {batch[3].report_id}]
    with store.read_sums(task, None, None) as sums:
        assert sums.total == 6
    with store.read_sums(other, None, None) as sums:
        assert sums.total == 3


def test_refusals_are_counted_per_bucket(store: SqlStore) -> None:
    task = kind_task("grr")
    day = task.floor_time(1.7e9)
    for _ in range(2):
        store.add_uploads([Upload(task, [], [], refused={day: 3, day + DAY: 1})])
    assert store.refusals(task, None, None) == 8
    assert store.refusals(task, day + DAY, None) == 2
    assert store.refusals(task, None, day) == 0


def test_a_shuffled_batch_is_recorded_once(store: SqlStore) -> None:
    task = kind_task("rr")
    day = task.floor_time(1.7e9)
    first = ShuffledBatch(task.task_id, b"\x01" * 16, day, size=40, reports=38)
    store.add_shuffled_batch(first)
    store.add_shuffled_batch(first)  # a shuffler's retry
    second = ShuffledBatch(task.task_id, b"\x02" * 16, day + DAY, 25, 25, slice_counts={0: 25})
    store.add_shuffled_batch(second)
    # the first batch gave no per-slice counts (a shuffler from before dimensions): {}
    both = ShuffledWindow(2, 25, 63, ({}, {0: 25}), buckets=(day, day + DAY), sizes=(40, 25))
    assert store.shuffled_window(task, None, None) == both
    first_day = ShuffledWindow(1, 40, 38, ({},), buckets=(day,), sizes=(40,))
    assert store.shuffled_window(task, None, day + DAY) == first_day
    assert store.shuffled_window(task, day + 2 * DAY, None) == ShuffledWindow(0, None, 0)


@pytest.mark.parametrize("kind", MECHANISMS)
def test_the_archive_and_the_export_hold_every_report(store: SqlStore, kind: str) -> None:
    task = kind_task(kind)
    store.create_task(StoredTask(task, archive=True))
    reports = kind_reports(task, 30, np.random.default_rng(5))
    day = task.floor_time(1.7e9)
    store.add_reports(task, envelopes(task, reports[:20], day), [0] * 20)
    store.add_reports(task, envelopes(task, reports[20:], day + DAY), [0] * 10)

    archived = list(store.archived(task))
    assert [(bucket, slice_index) for bucket, slice_index, _ in archived] == [
        (day, 0),
        (day + DAY, 0),
    ]
    mechanism = task.mechanism_object
    kept, sent = unpack(mechanism, [blob for _, _, blob in archived]), stack(mechanism, reports)
    for got, expected in zip(batch_columns(kept), batch_columns(sent), strict=True):
        assert np.array_equal(got, expected)

    dense, exported = dense_sums(task, reports), mechanism.new_sums()
    buckets = set()
    for bucket, slice_index, row, n, counters in store.sum_rows(task):  # folds staged first
        assert slice_index == 0  # a task without dimensions has the one slice
        buckets.add(bucket)
        exported.n[row] += n
        exported.table[row] += counters
    assert buckets == {day, day + DAY}
    assert np.array_equal(exported.n, dense.n) and np.array_equal(exported.table, dense.table)


def test_a_writable_store_says_so_twice(store: SqlStore) -> None:
    store.check_writable()
    store.check_writable()  # the probe row is replaced, not duplicated
