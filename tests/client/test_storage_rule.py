"""The device budget rule, once (ldp_telemetry.client.storage.admit_to), run against both
storages."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ldp_telemetry.client.privacy_ledger import Charge, Limits
from ldp_telemetry.client.sqlite_storage import SqliteStorage
from ldp_telemetry.client.storage import Admission, MemoryStorage, Pending, Slot, Storage

DAY = 86_400
FREE = Charge(0.0, 0, None)  # a report of a task without a permanent layer, at ε = 0


@pytest.fixture(params=["memory", "disk"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Storage]:
    """Each storage with a queue bound of 4 reports or 1,000 bytes."""
    made: Storage = (
        MemoryStorage(max_queue=4, max_bytes=1000)
        if request.param == "memory"
        else SqliteStorage(tmp_path, max_queue=4, max_bytes=1000)
    )
    yield made
    made.close()


def report(name: str, size: int = 10) -> Pending:
    return Pending("t", name, "x" * size)


def ids(batch: list[Pending]) -> list[str]:
    return [p.report_id for p in batch]


def slot(value: bytes, start: int = 0, length: int = DAY) -> Slot:
    return Slot("t", start, start + length, value)


def test_the_same_value_in_a_period_reuses_its_report(storage: Storage) -> None:
    made: list[str] = []

    def make() -> Pending:
        made.append("new")
        return report("first")

    assert storage.admit(slot(b"v"), FREE, Limits(2), make) is Admission.NEW
    assert storage.admit(slot(b"v"), FREE, Limits(2), lambda: report("second")) is Admission.REUSED
    assert made == ["new"] and storage.count() == 1  # no fresh noise, queued once
    storage.remove(["first"])
    assert storage.admit(slot(b"v"), FREE, Limits(2), lambda: report("third")) is Admission.REUSED
    assert ids(storage.claim(10, 1 << 20, 60)) == ["first"]  # same bytes again


def test_the_limit_counts_every_overlapping_period(storage: Storage) -> None:
    assert storage.admit(slot(b"a"), FREE, Limits(2), lambda: report("a")) is Admission.NEW
    assert storage.admit(slot(b"b"), FREE, Limits(2), lambda: report("b")) is Admission.NEW
    assert storage.admit(slot(b"c"), FREE, Limits(2), lambda: report("c")) is Admission.EXHAUSTED
    # A re-published task with hourly periods inside the same day shares that day's budget.
    assert (
        storage.admit(slot(b"d", 3600, 3600), FREE, Limits(2), lambda: report("d"))
        is Admission.EXHAUSTED
    )
    # The next day is a new budget; the ended day is forgotten.
    assert storage.admit(slot(b"c", DAY), FREE, Limits(2), lambda: report("c2")) is Admission.NEW


def test_a_full_queue_refuses_new_reports_and_keeps_the_queued_ones(storage: Storage) -> None:
    for i in range(4):
        assert (
            storage.admit(slot(bytes([i])), FREE, Limits(100), lambda i=i: report(f"r{i}"))
            is Admission.NEW
        )
    calls: list[int] = []
    assert (
        storage.admit(slot(b"x"), FREE, Limits(100), lambda: calls.append(1) or report("x"))
        is Admission.FULL
    )
    assert calls == []  # refused before privatizing: no noise drawn for nothing
    assert ids(storage.claim(10, 1 << 20, 60)) == ["r0", "r1", "r2", "r3"]
    storage.remove(["r0"])
    assert storage.admit(slot(b"x"), FREE, Limits(100), lambda: report("x")) is Admission.NEW


def test_the_byte_bound_refuses_a_report_that_does_not_fit(storage: Storage) -> None:
    assert storage.admit(slot(b"a"), FREE, Limits(100), lambda: report("a", 900)) is Admission.NEW
    assert storage.admit(slot(b"b"), FREE, Limits(100), lambda: report("b", 200)) is Admission.FULL
    assert storage.admit(slot(b"c"), FREE, Limits(100), lambda: report("c", 50)) is Admission.NEW
    assert storage.count() == 2


def test_a_memoized_report_that_no_longer_fits_is_refused(storage: Storage) -> None:
    assert storage.admit(slot(b"v"), FREE, Limits(100), lambda: report("v", 500)) is Admission.NEW
    storage.remove(["v"])
    assert storage.admit(slot(b"w"), FREE, Limits(100), lambda: report("w", 600)) is Admission.NEW
    assert storage.admit(slot(b"v"), FREE, Limits(100), lambda: report("v2")) is Admission.FULL


def test_a_claimed_report_goes_to_no_other_claim_until_released_removed_or_lapsed(
    storage: Storage,
) -> None:
    for name in ("r0", "r1", "r2"):
        made = storage.admit(slot(name.encode()), FREE, Limits(3), lambda name=name: report(name))
        assert made is Admission.NEW
    assert ids(storage.claim(2, 1 << 20, 60)) == ["r0", "r1"]
    assert ids(storage.claim(10, 1 << 20, 60)) == ["r2"]  # the rest, never r0 or r1 again
    assert storage.claim(10, 1 << 20, 60) == [] and storage.count() == 3
    storage.release(["r1"])
    storage.remove(["r0"])
    assert ids(storage.claim(10, 1 << 20, 60)) == ["r1"] and storage.count() == 2
    storage.release(["r1", "r2"])
    assert ids(storage.claim(10, 1 << 20, 0.05)) == ["r1", "r2"]
    assert storage.claim(10, 1 << 20, 60) == []
    time.sleep(0.1)  # the lease has passed: free again (a killed uploader's reports go later)
    assert ids(storage.claim(10, 1 << 20, 60)) == ["r1", "r2"]
