"""On-device limits: N reports per task per period, memoized reports, the device secret."""

from __future__ import annotations

import gzip
import json
import stat
from pathlib import Path

import pytest

from client import Client, InMemoryTransport
from client.budget import SECRET_BYTES, canonical_value, load_secret, lookup_key
from shared import TaskConfig

pytestmark = pytest.mark.timeout(60)
DAY = 86_400


class Clock:
    """A settable Unix clock."""

    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def sent_ids(transport: InMemoryTransport) -> list[str]:
    """Return the report ids of every upload body, in order (repeats included)."""
    ids = []
    for request in transport.requests:
        if request.method == "POST":
            body = json.loads(gzip.decompress(request.body or b""))
            ids += [report["report_id"] for report in body["reports"]]
    return ids


def make(transport: InMemoryTransport, clock: Clock, **options: object) -> Client:
    return Client("memory://test", transport=transport, clock=clock, atexit_timeout=None,
                  **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("limit", [1, 3])
def test_the_record_past_the_limit_is_dropped_and_counted(tasks: dict[str, TaskConfig],
                                                          limit: int) -> None:
    sdk = make(InMemoryTransport(tasks.values()), Clock(), reports_per_period=limit)
    results = [sdk.record("t-cms", f"value-{i}") for i in range(limit + 1)]
    assert results == [True] * limit + [False]
    assert sdk.stats().dropped == {"budget_exhausted": 1}
    assert sdk.record("t-rr", True)  # the limit is per task
    sdk.close(1)


def test_the_same_value_in_a_period_sends_the_same_report(tasks: dict[str, TaskConfig]) -> None:
    transport = InMemoryTransport(tasks.values())
    sdk = make(transport, Clock(), reports_per_period=1)
    assert sdk.record("t-cms", "same")
    assert sdk.flush(5)
    assert sdk.record("t-cms", "same")  # no budget spent, no fresh noise
    assert sdk.flush(5)
    first, second = sent_ids(transport)
    assert first == second
    assert len(transport.reports("t-cms")) == 1  # counted once by the server
    stats = sdk.stats()
    assert stats.sent == 2 and stats.rejected == {} and stats.dropped == {}
    sdk.close(1)


def test_a_reused_report_is_not_queued_twice(tasks: dict[str, TaskConfig]) -> None:
    transport = InMemoryTransport(tasks.values())
    sdk = make(transport, Clock(), reports_per_period=1, flush_interval=60.0)
    assert sdk.record("t-grr", "red") and sdk.record("t-grr", "red")
    assert sdk.stats().queued == 1
    sdk.close(5)


def test_a_new_period_gets_a_new_budget_and_fresh_noise(tasks: dict[str, TaskConfig]) -> None:
    transport = InMemoryTransport(tasks.values())
    clock = Clock()
    sdk = make(transport, clock, reports_per_period=1)
    assert sdk.record("t-rr", True) and not sdk.record("t-rr", False)
    clock.now += DAY
    assert sdk.record("t-rr", True)
    assert sdk.flush(5)
    reports = transport.reports("t-rr")
    assert len(reports) == 2 and reports[0].report_id != reports[1].report_id
    assert reports[1].time - reports[0].time == DAY
    sdk.close(1)


def test_budget_and_memo_survive_a_restart(tasks: dict[str, TaskConfig], tmp_path: Path) -> None:
    transport, clock = InMemoryTransport(tasks.values()), Clock()
    first = make(transport, clock, data_dir=tmp_path, reports_per_period=1)
    assert first.record("t-hcms", "kept")
    assert first.close(5)
    second = make(transport, clock, data_dir=tmp_path, reports_per_period=1)
    assert second.record("t-hcms", "other") is False
    assert second.stats().dropped == {"budget_exhausted": 1}
    assert second.record("t-hcms", "kept")
    assert second.close(5)
    ids = sent_ids(transport)
    assert len(ids) == 2 and ids[0] == ids[1]


def test_processes_sharing_a_data_dir_share_one_budget(tasks: dict[str, TaskConfig],
                                                       tmp_path: Path) -> None:
    transport, clock = InMemoryTransport(tasks.values()), Clock()
    one = make(transport, clock, data_dir=tmp_path, reports_per_period=1, flush_interval=60.0)
    two = make(transport, clock, data_dir=tmp_path, reports_per_period=1, flush_interval=60.0)
    assert one.record("t-rr", True)
    assert two.record("t-rr", False) is False
    one.close(5)
    two.close(5)


def test_device_secret_file(tmp_path: Path) -> None:
    secret = load_secret(tmp_path)
    assert len(secret) == SECRET_BYTES and load_secret(tmp_path) == secret
    assert stat.S_IMODE((tmp_path / "device.key").stat().st_mode) == 0o600
    assert load_secret(None) != load_secret(None)


def test_lookup_key_is_an_hmac_of_task_period_and_value(tasks: dict[str, TaskConfig]) -> None:
    task, secret = tasks["cms"], b"k" * 32
    key = lookup_key(secret, task, 0, canonical_value(task, "v"))
    assert len(key) == 32
    assert key == lookup_key(secret, task, 0, canonical_value(task, "v"))
    assert key != lookup_key(secret, task, DAY, canonical_value(task, "v"))
    assert key != lookup_key(b"j" * 32, task, 0, canonical_value(task, "v"))
    assert key != lookup_key(secret, tasks["hcms"], 0, canonical_value(tasks["hcms"], "v"))
    rr = tasks["rr"]
    assert canonical_value(rr, True) == canonical_value(rr, 1) != canonical_value(rr, False)
