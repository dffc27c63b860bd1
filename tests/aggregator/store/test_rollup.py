"""The roll-up (every bucket's sums of a task added up) answers exactly as the buckets do.

Over both backends: reads over random windows, those that cover every stored bucket (read
from the roll-up) and those that cut the range (read bucket by bucket), equal the shared
accumulator of the window's reports; so does the roll-up built for a task whose sums
predate it, and folds after that build keep it exact.
"""

from __future__ import annotations

import numpy as np
import pytest

from ldp_telemetry.aggregator.store import StoredTask, rollup
from ldp_telemetry.aggregator.store.base import SqlStore
from ldp_telemetry.aggregator.store.reads import NO_LIMIT
from ldp_telemetry.shared import TaskConfig
from ldp_telemetry.shared.codec import Payload
from tests.aggregator.store.cases import dense_sums, kind_reports, kind_task
from tests.aggregator.stores import WITHOUT_SLICES, Stores
from tests.support.reports import envelopes

BUCKETS = 6


def fill(
    store: SqlStore, task: TaskConfig, rng: np.random.Generator, count: int
) -> dict[int, list[Payload]]:
    """Upload ``count`` reports over BUCKETS buckets in random order, a few at a time."""
    first, step = task.floor_time(1.7e9), task.time_precision
    by_bucket: dict[int, list[Payload]] = {}
    reports = kind_reports(task, count, rng)
    for start in range(0, count, 7):
        bucket = first + step * int(rng.integers(BUCKETS))
        part = reports[start : start + 7]
        store.add_reports(task, envelopes(task, part, bucket), [0] * len(part))
        by_bucket.setdefault(bucket, []).extend(part)
    return by_bucket


def check_window(
    store: SqlStore,
    task: TaskConfig,
    by_bucket: dict[int, list[Payload]],
    start: int | None,
    end: int | None,
) -> None:
    """Assert that a read of [start, end) equals the accumulator of its reports."""
    inside = [
        r
        for b, reports in by_bucket.items()
        if (start is None or b >= start) and (end is None or b < end)
        for r in reports
    ]
    dense = dense_sums(task, inside)
    rows = task.mechanism_object.sums_shape[0]
    with store.read_sums(task, start, end) as sums:
        assert sums.total == len(inside)
        assert np.array_equal(sums.n, dense.n)
        assert np.array_equal(sums.table[0:rows], dense.table)


def random_windows(
    by_bucket: dict[int, list[Payload]], step: int, rng: np.random.Generator
) -> list[tuple[int | None, int | None]]:
    """Return the unbounded window, windows exactly around every bucket, and random cuts."""
    low, high = min(by_bucket), max(by_bucket) + step
    windows: list[tuple[int | None, int | None]] = [(None, None), (low, high), (low - step, None)]
    for _ in range(8):
        a, b = sorted(int(x) for x in rng.integers(low - step, high + step, size=2))
        windows.append((a, b + 1))
    return windows


@pytest.mark.parametrize("kind", ["hh", "cms"])
@pytest.mark.parametrize("staged_bytes", [1, 1 << 30], ids=["fold-often", "fold-on-read"])
def test_reads_over_random_windows_equal_the_reports(
    stores: Stores, backend: str, kind: str, staged_bytes: int
) -> None:
    rng = np.random.default_rng(7)
    store = stores.open(backend, staged_bytes=staged_bytes)
    task = kind_task(kind)
    store.create_task(StoredTask(task))
    by_bucket = fill(store, task, rng, 120)
    for start, end in random_windows(by_bucket, task.time_precision, rng):
        check_window(store, task, by_bucket, start, end)
    more = fill(store, task, rng, 40)  # folds after reads keep the roll-up exact
    for bucket, reports in more.items():
        by_bucket.setdefault(bucket, []).extend(reports)
    check_window(store, task, by_bucket, None, None)


def test_a_task_older_than_the_roll_up_gets_it_built_on_first_read(
    stores: Stores, backend: str
) -> None:
    rng = np.random.default_rng(8)
    store = stores.open(backend, staged_bytes=1)
    task, empty = kind_task("hh"), kind_task("cms")
    for each in (task, empty):
        store.create_task(StoredTask(each))
    by_bucket = fill(store, task, rng, 100)
    with store._write() as tx:  # the database as schema version 5 left it
        for statement in WITHOUT_SLICES[backend]:
            tx.execute(statement)
        tx.execute("DROP TABLE rollup")
        tx.execute("DROP TABLE rollup_ready")
        tx.execute("DELETE FROM schema_version WHERE version >= 6")
    again = stores.reopen(store, staged_bytes=1)  # applies migrations 0006 to 0008
    assert again.schema_change == (5, again.schema_change[1])
    with again._read() as tx:
        assert not rollup.is_ready(tx, task.task_id)  # it had sums: built on first read
        assert rollup.is_ready(tx, empty.task_id)  # no sums yet: every fold goes in
        assert not rollup.covers(tx, task.task_id, *NO_LIMIT)
    check_window(again, task, by_bucket, None, None)
    with again._read() as tx:
        assert rollup.covers(tx, task.task_id, *NO_LIMIT)
    more = fill(again, task, rng, 30)
    for bucket, reports in more.items():
        by_bucket.setdefault(bucket, []).extend(reports)
    check_window(again, task, by_bucket, None, None)
    cut = min(by_bucket) + task.time_precision  # a window that cuts the roll-up: per bucket
    check_window(again, task, by_bucket, cut, None)
