"""PostgreSQL's group commit in one statement, its general path, and folds off the writer.

What both backends share (replays inside a group, refusals, the archive) is tested on both
in test_tables.py; these are about what only PostgreSQL does.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import numpy as np
import psycopg
import pytest

from ldp_telemetry.aggregator.store import StoredTask, Upload
from ldp_telemetry.aggregator.store.base import SqlStore
from ldp_telemetry.aggregator.store.postgres.backend import PostgresStore
from ldp_telemetry.shared import TaskConfig
from tests.aggregator.store.cases import kind_reports, kind_task
from tests.aggregator.stores import Stores
from tests.support.reports import envelopes

pytestmark = pytest.mark.timeout(120)


def pg_store(stores: Stores, **options: Any) -> PostgresStore:
    store = stores.open("postgresql", **options)
    assert isinstance(store, PostgresStore)
    return store


def uploads(task: TaskConfig, count: int, size: int, seed: int) -> list[Upload]:
    batch = envelopes(task, kind_reports(task, count * size, np.random.default_rng(seed)), 1.7e9)
    return [Upload(task, batch[i : i + size], [2**40] * size) for i in range(0, len(batch), size)]


def staged_rows(store: PostgresStore) -> int:
    with store._read() as tx:
        ((count,),) = tx.execute("SELECT count(*) FROM staged")
    return int(count)


def test_only_a_group_holding_a_stored_id_takes_the_general_path(
    stores: Stores, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = pg_store(stores)
    task = kind_task("cms")
    store.create_task(StoredTask(task))
    general: list[int] = []
    general_path = SqlStore.add_uploads

    def counted(self: SqlStore, group: list[Upload]) -> list[set[bytes]]:
        general.append(len(group))
        return general_path(self, group)

    monkeypatch.setattr(SqlStore, "add_uploads", counted)
    first, second, third = uploads(task, 3, 4, seed=1)
    assert store.add_uploads([first, second]) == [set(), set()]
    assert general == []
    again = Upload(task, [third.envelopes[0], first.envelopes[1]], [2**40] * 2)
    assert store.add_uploads([again]) == [{first.envelopes[1].report_id}]
    assert general == [1]  # committed by the general path, which found the stored id
    assert store.add_uploads([third]) == [{third.envelopes[0].report_id}]
    with store.read_sums(task, None, None) as sums:
        assert sums.total == 12


def test_two_nodes_racing_on_the_same_ids_count_each_once(stores: Stores) -> None:
    first = pg_store(stores)
    second = stores.reopen(first)
    task = kind_task("cms")
    first.create_task(StoredTask(task))
    groups = [uploads(task, 4, 5, seed=s) for s in range(40)]  # 800 distinct reports
    answers: dict[str, list[list[set[bytes]]]] = {"first": [], "second": []}

    def node(name: str, store: SqlStore, order: list[int]) -> None:
        for index in order:  # the nodes meet on every group, from opposite ends
            answers[name].append(store.add_uploads(groups[index]))

    nodes = [
        threading.Thread(target=node, args=("first", first, list(range(40)))),
        threading.Thread(target=node, args=("second", second, list(range(39, -1, -1)))),
    ]
    for thread in nodes:
        thread.start()
    for thread in nodes:
        thread.join(timeout=90)
    replayed = [ids for name in answers for group in answers[name] for ids in group]
    assert len(replayed) == 2 * 40 * 4
    assert sum(len(ids) for ids in replayed) == 800  # each id a replay on exactly one node
    with first.read_sums(task, None, None) as sums:
        assert sums.total == 800


def test_a_due_fold_runs_beside_the_writer_not_on_it(stores: Stores) -> None:
    store = pg_store(stores, staged_bytes=1)  # a fold is due after every group
    task = kind_task("cms")
    store.create_task(StoredTask(task))
    store.add_uploads(uploads(task, 1, 3, seed=2))
    deadline = time.monotonic() + 30
    while staged_rows(store) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert staged_rows(store) == 0  # folded without a read asking for it
    with psycopg.connect(store.url) as blocker:
        blocker.execute("LOCK TABLE sums IN ACCESS EXCLUSIVE MODE")  # the next fold waits
        started = time.monotonic()
        for group in (uploads(task, 2, 3, seed=3), uploads(task, 2, 3, seed=4)):
            store.add_uploads(group)
        assert time.monotonic() - started < 10  # uploads were not held by the waiting fold
        assert staged_rows(store) > 0
    with store.read_sums(task, None, None) as sums:  # the lock is gone: folds finish
        assert sums.total == 15


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_writes_on_a_connection_of_its_own(stores: Stores) -> None:
    store = pg_store(stores)
    task = kind_task("rr")
    store.create_task(StoredTask(task))
    parts = uploads(task, 3, 2, seed=5)
    store.add_uploads([parts[0]])
    parent = store._writer._conn
    assert parent is not None
    backend = parent.info.backend_pid
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through its exit status
        ok = False
        try:
            store.add_uploads([parts[1]])
            ok = store._writer._conn is not parent
            store.close()
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    store.add_uploads([parts[2]])  # the parent's connection is still open and its own
    assert store._writer._conn is parent and parent.info.backend_pid == backend
    with store.read_sums(task, None, None) as sums:
        assert sums.total == 6


@pytest.mark.parametrize("setting", ["on", "off"])
def test_the_writer_connection_has_the_store_s_synchronous_commit(
    stores: Stores, setting: str
) -> None:
    store = pg_store(stores, synchronous_commit=setting)
    task = kind_task("rr")
    store.create_task(StoredTask(task))
    store.add_uploads(uploads(task, 1, 2, seed=6))
    assert store._writer._conn is not None
    ((shown,),) = store._writer._conn.execute("SHOW synchronous_commit").fetchall()
    assert shown == setting
