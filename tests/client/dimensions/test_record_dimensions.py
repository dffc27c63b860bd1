"""The SDK's public dimensions: given once on the client, overridden per record, mapped
onto the task's closed lists (other) before the report is queued, in both storages."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ldp_telemetry.client import Client, ConfigurationError, InMemoryTransport
from ldp_telemetry.shared import TaskConfig

pytestmark = pytest.mark.timeout(60)
PLATFORM = {"name": "platform", "values": ["android", "ios", "web"]}
VERSION = {"name": "app_version", "values": ["5.1", "5.2"]}
SLICED = TaskConfig.create(
    task_id="sliced", mechanism="grr", epsilon=2.0, domain=("red", "green"),
    dimensions=[PLATFORM, VERSION],
)  # fmt: skip
PLAIN = TaskConfig.create(task_id="plain", mechanism="rr", epsilon=1.0)


def client(transport: InMemoryTransport, **options: Any) -> Client:
    sdk = Client(
        "memory://test", transport=transport, atexit_timeout=None, reports_per_period=None,
        task_ids=transport.task_ids(), **options,
    )  # fmt: skip
    assert sdk.wait_for_tasks(timeout=10)
    return sdk


def slices_sent(transport: InMemoryTransport, task_id: str = "sliced") -> list[dict[str, str]]:
    assert SLICED.dimensions is not None
    return [SLICED.dimensions.values_of(r.slice) for r in transport.reports(task_id)]


def test_client_dimensions_are_coarsened_and_overridden_per_record() -> None:
    transport = InMemoryTransport([SLICED, PLAIN])
    sdk = client(transport, dimensions={"platform": "ios", "app_version": "5.2", "country": "fr"})
    assert sdk.record("sliced", "red")
    assert sdk.record("sliced", "red", dimensions={"app_version": "5.3-beta"})  # not in list
    assert sdk.record("sliced", "green", dimensions={"platform": "tvOS"})
    assert sdk.record("plain", True, dimensions={"platform": "ios"})  # ignored: no dimensions
    assert sdk.flush(5)
    assert slices_sent(transport) == [
        {"platform": "ios", "app_version": "5.2"},
        {"platform": "ios", "app_version": "other"},
        {"platform": "other", "app_version": "5.2"},
    ]
    assert [r.slice for r in transport.reports("plain")] == [0]
    assert sdk.stats().dropped == {}
    sdk.close(5)


def test_a_record_without_dimensions_lands_in_other() -> None:
    transport = InMemoryTransport([SLICED])
    sdk = client(transport)
    assert sdk.record("sliced", "red")
    assert sdk.record("sliced", "green", dimensions={"platform": "web"})
    assert sdk.flush(5)
    assert slices_sent(transport) == [
        {"platform": "other", "app_version": "other"},
        {"platform": "web", "app_version": "other"},
    ]
    sdk.close(5)


def test_the_same_value_under_other_dimensions_is_a_new_report() -> None:
    transport = InMemoryTransport([SLICED])
    sdk = client(transport, dimensions={"platform": "android", "app_version": "5.1"})
    assert sdk.record("sliced", "red")
    assert sdk.record("sliced", "red")  # the period's report again (same id)
    assert sdk.record("sliced", "red", dimensions={"app_version": "5.2"})  # another slice
    assert sdk.flush(5)
    assert len(transport.reports("sliced")) == 2
    assert slices_sent(transport)[1] == {"platform": "android", "app_version": "5.2"}
    sdk.close(5)


def test_the_queued_report_already_holds_the_coarsened_dims(tmp_path: Path) -> None:
    transport = InMemoryTransport([SLICED])
    sdk = client(
        transport, data_dir=tmp_path, dimensions={"platform": "Linux x86_64"},
        batch_size=100, flush_interval=3600,  # kept queued until flush
    )  # fmt: skip
    assert sdk.record("sliced", "red", dimensions={"app_version": "5.1", "user": "alice"})
    # The report as written at record time: the ledger keeps it for the period; the outbox
    # too, unless the uploader's pass that fetched the task sent it right after (it did once,
    # on a loaded machine: wait_for_tasks returns before that pass sends what is queued).
    db = sqlite3.connect(tmp_path / "queue.sqlite3")
    written = [json.loads(report) for (report,) in db.execute("SELECT report FROM ledger")]
    queued = [json.loads(report) for (report,) in db.execute("SELECT report FROM outbox")]
    db.close()
    assert [w["dims"] for w in written] == [{"platform": "other", "app_version": "5.1"}]
    assert queued in ([], written)
    assert sdk.flush(5)
    assert slices_sent(transport) == [{"platform": "other", "app_version": "5.1"}]
    sdk.close(5)


def test_bad_dimensions_are_refused_at_construction_and_dropped_per_record() -> None:
    transport = InMemoryTransport([SLICED])
    not_a_mapping: Any = ["ios"]
    with pytest.raises(ConfigurationError, match="dimensions"):
        Client("memory://test", transport=transport, atexit_timeout=None, dimensions=not_a_mapping)
    sdk = client(transport)
    assert not sdk.record("sliced", "red", dimensions=not_a_mapping)
    assert sdk.stats().dropped == {"invalid_value": 1}
    sdk.close(5)
