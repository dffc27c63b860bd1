"""Group commit: acks only after the commit, one answer per member, replays counted once.

The committer runs over a real store (SQLite and PostgreSQL) wrapped in a gate that can
hold a transaction open or make it fail, so each guarantee is checked by what the store
holds when a member is answered, not by timing.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, wait
from types import SimpleNamespace
from typing import cast

import numpy as np
import pytest
from flask import Flask

from ldp_telemetry.aggregator.store import Store, StoreFull, StoreUnavailable, Upload
from ldp_telemetry.aggregator.store.group_commit import GroupCommitter
from ldp_telemetry.shared import TaskConfig
from tests.support.reports import envelopes, payloads

WAIT = 30  # s: bound on every wait below (they return at once when the code is right)


class GatedStore:
    """A store whose ``add_uploads`` can be held at a gate, or made to fail."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Semaphore(0)
        self.groups: list[int] = []  # uploads per call, in order
        self.fail_with: BaseException | None = None
        self.poison: set[bytes] = set()  # an upload holding one of these ids raises

    def add_uploads(self, uploads: Sequence[Upload]) -> list[set[bytes]]:
        self.entered.release()
        assert self.gate.wait(WAIT)
        self.groups.append(len(uploads))
        if self.fail_with is not None:
            raise self.fail_with
        if any(e.report_id in self.poison for u in uploads for e in u.envelopes):
            raise ValueError("an upload that trips a bug")
        return self.store.add_uploads(uploads)

    def collect_expired(self, now: int) -> int:
        return self.store.collect_expired(now)


@pytest.fixture
def task(app: Flask) -> TaskConfig:
    client = app.test_client()
    response = client.post(
        "/v1/tasks",
        json={"task_id": "group", "mechanism": "rr", "epsilon": 1.0, "min_batch_size": 1},
        headers={"Authorization": "Bearer admin-test-token"},
    )
    assert response.status_code == 201, response.text
    body = response.get_json()
    body.pop("upload_key", None)
    body.pop("archive", None)
    return TaskConfig.from_dict(body)


def upload(task: TaskConfig, count: int, seed: int) -> Upload:
    reports = envelopes(task, payloads(task, [True] * count, np.random.default_rng(seed)))
    return Upload(task, reports, [2**40] * count)


def stored_n(store: Store, task: TaskConfig) -> int:
    with store.read_sums(task, None, None) as sums:
        return int(sums.total)


def hold_the_writer(
    app: Flask, first: Upload
) -> tuple[Store, GatedStore, GroupCommitter, Future[set[bytes]]]:
    """Return a committer whose writer is held inside the transaction of ``first``, so
    the uploads submitted next wait together for the one after it."""
    store: Store = app.extensions["ldp_store"]
    gated = GatedStore(store)
    committer = GroupCommitter(gated)
    gated.gate.clear()
    blocker = committer.submit(first)
    assert gated.entered.acquire(timeout=WAIT)  # the writer holds the first transaction
    return store, gated, committer, blocker


def test_acks_wait_for_the_commit_and_waiting_uploads_share_one(
    app: Flask, task: TaskConfig
) -> None:
    store, gated, committer, first = hold_the_writer(app, upload(task, 3, 0))
    rest = [committer.submit(upload(task, 2, seed)) for seed in range(1, 9)]
    assert not any(f.done() for f in [first, *rest])  # nothing answered before a commit
    assert stored_n(store, task) == 0

    answered_with: list[int] = []
    answered = threading.Semaphore(0)

    def record(_: object) -> None:  # runs on the writer thread as a member is answered
        answered_with.append(stored_n(store, task))
        answered.release()

    for future in [first, *rest]:
        future.add_done_callback(record)
    gated.gate.set()
    assert all(answered.acquire(timeout=WAIT) for _ in range(9))
    assert [f.result() for f in [first, *rest]] == [set()] * 9
    assert gated.groups == [1, 8]  # the eight that waited went in one transaction
    # every member was answered only once its group's reports were stored
    assert answered_with == [3] + [3 + 16] * 8
    committer.close()


def test_a_store_fault_answers_every_member_with_it_and_stores_nothing(
    app: Flask, task: TaskConfig
) -> None:
    store, gated, committer, blocker = hold_the_writer(app, upload(task, 1, 0))
    members = [committer.submit(upload(task, 2, seed)) for seed in range(1, 6)]
    gated.fail_with = StoreFull("disk full")
    gated.gate.set()
    assert not wait([blocker, *members], timeout=WAIT).not_done
    for future in [blocker, *members]:
        with pytest.raises(StoreUnavailable):
            future.result()
    assert stored_n(store, task) == 0
    gated.fail_with = None  # once the fault is gone the same uploads go through
    assert committer.add(upload(task, 2, 1)) == set()
    committer.close()


def test_an_unexpected_error_fails_only_its_own_upload(app: Flask, task: TaskConfig) -> None:
    store, gated, committer, blocker = hold_the_writer(app, upload(task, 1, 0))
    good = [upload(task, 2, seed) for seed in range(1, 5)]
    bad = upload(task, 2, 99)
    gated.poison = {bad.envelopes[0].report_id}
    futures = [committer.submit(u) for u in [good[0], good[1], bad, good[2], good[3]]]
    gated.gate.set()
    assert not wait([blocker, *futures], timeout=WAIT).not_done
    with pytest.raises(ValueError):
        futures[2].result()
    assert [futures[i].result() for i in (0, 1, 3, 4)] == [set()] * 4
    assert stored_n(store, task) == 1 + 8
    committer.close()


def test_an_id_sent_by_two_members_of_a_group_counts_once(app: Flask, task: TaskConfig) -> None:
    first = upload(task, 1, 0)
    store, gated, committer, blocker = hold_the_writer(app, first)
    a = upload(task, 4, 1)
    # b repeats two of a's reports (same group) and adds two; c repeats the blocker's
    b = Upload(task, [*a.envelopes[:2], *upload(task, 2, 2).envelopes], [2**40] * 4)
    c = Upload(task, first.envelopes, [2**40])
    futures = [committer.submit(x) for x in (a, b, c)]
    gated.gate.set()
    assert not wait([blocker, *futures], timeout=WAIT).not_done
    assert gated.groups == [1, 3]
    assert futures[0].result() == set()
    assert futures[1].result() == {e.report_id for e in a.envelopes[:2]}
    assert futures[2].result() == {first.envelopes[0].report_id}
    assert stored_n(store, task) == 1 + 4 + 2
    committer.close()


def test_replays_across_one_group_and_the_store(app: Flask, task: TaskConfig) -> None:
    store: Store = app.extensions["ldp_store"]
    first = upload(task, 5, 1)
    assert store.add_uploads([first]) == [set()]
    again = Upload(task, first.envelopes[:3], [2**40] * 3)
    fresh = upload(task, 3, 2)
    twice = Upload(task, [*fresh.envelopes[:1], *upload(task, 1, 3).envelopes], [2**40] * 2)
    answers = store.add_uploads([again, fresh, twice])
    assert answers[0] == {e.report_id for e in first.envelopes[:3]}
    assert answers[1] == set()
    assert answers[2] == {fresh.envelopes[0].report_id}
    assert stored_n(store, task) == 5 + 3 + 1


def test_the_event_loop_hands_over_one_pass_together_and_awaits_the_commit(
    app: Flask, task: TaskConfig
) -> None:
    store: Store = app.extensions["ldp_store"]
    gated = GatedStore(store)
    committer = GroupCommitter(gated)
    uploads = [upload(task, 2, seed) for seed in range(10)]

    async def main() -> list[set[bytes]]:
        futures = [committer.submit_async(u) for u in uploads]  # one pass of the loop
        return list(await asyncio.gather(*futures))

    assert asyncio.run(main()) == [set()] * 10
    assert gated.groups == [10]
    assert stored_n(store, task) == 20
    committer.close()


def test_a_cancelled_request_is_neither_stored_nor_answered(app: Flask, task: TaskConfig) -> None:
    store: Store = app.extensions["ldp_store"]
    committer = GroupCommitter(store)

    async def main() -> set[bytes]:
        gone = committer.submit_async(upload(task, 3, 1))
        gone.cancel()  # its client went away before the hand-over
        return await committer.submit_async(upload(task, 2, 2))

    assert asyncio.run(main()) == set()
    assert stored_n(store, task) == 2
    committer.close()


FORK_SCRIPT = """
import os, sys
from types import SimpleNamespace
from ldp_telemetry.aggregator.store.group_commit import GroupCommitter


class Recorder:  # a store that notes which process committed each upload
    def add_uploads(self, uploads):
        return [{os.getpid().to_bytes(4, "big")} for _ in uploads]

    def collect_expired(self, now):
        return 0


committer = GroupCommitter(Recorder())
parent = committer.add(SimpleNamespace(envelopes=[1]))  # the parent's writer thread runs
assert parent == {os.getpid().to_bytes(4, "big")}
child = os.fork()
if child == 0:
    answer = committer.submit(SimpleNamespace(envelopes=[1])).result(timeout=30)
    os._exit(0 if answer == {os.getpid().to_bytes(4, "big")} else 1)
_, status = os.waitpid(child, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def test_a_forked_worker_gets_its_own_writer() -> None:
    # A committer used before a fork hands the child's uploads to a writer thread of the
    # child (the parent's does not exist there). Run in a process of its own: forking the
    # test session, with its other threads, could copy a lock one of them holds.
    subprocess.run([sys.executable, "-c", FORK_SCRIPT], check=True, timeout=120)


class Held:
    """A store with nothing behind it: it notes each group's size, and can hold a commit."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Semaphore(0)
        self.groups: list[int] = []

    def add_uploads(self, uploads: Sequence[Upload]) -> list[set[bytes]]:
        self.entered.release()
        assert self.gate.wait(WAIT)
        self.groups.append(len(uploads))
        return [set() for _ in uploads]

    def collect_expired(self, now: int) -> int:
        return 0


def one_report() -> Upload:
    return cast(Upload, SimpleNamespace(envelopes=[SimpleNamespace(report_id=b"id")]))


# max_wait is the tests' WAIT: a group that waited it out would fail the third of it below.
def test_a_lightly_loaded_committer_commits_at_once() -> None:
    # One upload at a time (each the only one out): no group could grow by waiting.
    held = Held()
    committer = GroupCommitter(cast(Store, held), max_wait=WAIT)
    for _ in range(3):
        assert committer.submit(one_report()).result(timeout=WAIT / 3) == set()
    assert held.groups == [1, 1, 1]
    committer.close()


def test_a_group_waits_for_as_many_uploads_as_a_recent_group() -> None:
    held = Held()
    committer = GroupCommitter(cast(Store, held), max_wait=WAIT)
    held.gate.clear()
    futures = [committer.submit(one_report())]
    assert held.entered.acquire(timeout=WAIT)  # the writer holds the first commit
    futures += [committer.submit(one_report()) for _ in range(3)]  # they wait: a group of 3
    held.gate.set()
    assert not wait(futures, timeout=WAIT / 3).not_done
    futures = [committer.submit(one_report())]
    time.sleep(0.2)  # the writer took it alone: without the wait it would commit it now
    futures += [committer.submit(one_report()) for _ in range(2)]
    # the three share a commit, made once the third came, not when max_wait ran out
    assert not wait(futures, timeout=WAIT / 3).not_done
    assert held.groups == [1, 3, 3]
    committer.close()
