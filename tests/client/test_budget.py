"""On-device limits: N reports per task per period, memoized reports, the device secret."""

from __future__ import annotations

import gzip
import json
import stat
from pathlib import Path

import pytest

from ldp_telemetry.client import Client, InMemoryTransport, Request, Response
from ldp_telemetry.client.budget import SECRET_BYTES, canonical_value, load_secret, lookup_key
from ldp_telemetry.shared import TaskConfig

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
    """A client that knows the transport's tasks (its uploader fetched them) when returned."""
    sdk = Client(
        "memory://test",
        transport=transport,
        clock=clock,
        atexit_timeout=None,
        task_ids=transport.task_ids(),
        **options,
    )
    assert sdk.wait_for_tasks(timeout=10)
    return sdk


@pytest.mark.parametrize("limit", [1, 3])
def test_the_record_past_the_limit_is_dropped_and_counted(
    tasks: dict[str, TaskConfig], limit: int
) -> None:
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


def test_processes_sharing_a_data_dir_share_one_budget(
    tasks: dict[str, TaskConfig], tmp_path: Path
) -> None:
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


class Republishing(InMemoryTransport):
    """An in-memory collector whose task configurations are revalidated at every wake."""

    def handle(self, request: Request, *, timeout: float) -> Response:
        answer = super().handle(request, timeout=timeout)
        if request.method != "GET":
            return answer
        return Response(
            answer.status,
            {**answer.headers, "cache-control": "max-age=0"},
            answer.body,
            answer.retries,
        )


@pytest.mark.parametrize("change", [{"hash_seed": 99}, {"time_precision": 3600}])
@pytest.mark.parametrize("on_disk", [False, True])
def test_a_republished_task_gets_no_fresh_budget(
    tasks: dict[str, TaskConfig], tmp_path: Path, change: dict[str, int], on_disk: bool
) -> None:
    # An untrusted collector re-publishes a task under the same id with new parameters (a
    # new fingerprint): the device must not draw fresh noise for the same period again.
    old = tasks["cms"]
    transport, clock = Republishing(tasks.values()), Clock()
    sdk = make(transport, clock, data_dir=tmp_path if on_disk else None, reports_per_period=1)
    assert sdk.record("t-cms", "same")
    assert sdk.flush(5)
    new = TaskConfig.create(
        task_id="t-cms",
        mechanism="cms",
        epsilon=4.0,
        k=16,
        m=64,
        **{"hash_seed": old.hash_seed, **change},
    )
    assert new.fingerprint != old.fingerprint
    transport.add_task(new)
    assert sdk.record("t-rr", True) and sdk.flush(5)  # the uploader refetched t-cms meanwhile
    assert sdk.record("t-cms", "same") is False  # neither a fresh report of the same value
    assert sdk.record("t-cms", "other") is False  # nor of another one
    assert sdk.stats().dropped == {"budget_exhausted": 2}
    assert sdk.flush(5) and len(transport.reports("t-cms")) == 1
    clock.now += DAY  # the next period (of either configuration) has a budget again
    assert sdk.record("t-cms", "same") and sdk.flush(5)
    assert [r.fingerprint for r in transport.reports("t-cms")] == [old.fingerprint, new.fingerprint]
    sdk.close(1)


def test_a_larger_limit_counts_reports_of_every_configuration(tasks: dict[str, TaskConfig]) -> None:
    transport, clock = Republishing(tasks.values()), Clock()
    sdk = make(transport, clock, reports_per_period=2)
    assert sdk.record("t-grr", "red") and sdk.flush(5)
    transport.add_task(
        TaskConfig.create(
            task_id="t-grr", mechanism="grr", epsilon=3.0, domain=("red", "green", "blue")
        )
    )
    assert sdk.record("t-rr", True) and sdk.flush(5)
    assert sdk.record("t-grr", "red")  # the second of two: a fresh report, new parameters
    assert sdk.record("t-grr", "red")  # the same value again: that report, reused
    assert sdk.record("t-grr", "green") is False  # two reports this period already
    assert sdk.flush(5) and len(transport.reports("t-grr")) == 2
    assert sdk.stats().dropped == {"budget_exhausted": 1}
    sdk.close(1)
