"""The SDK records hh values like any other: one fixed level per device and task."""

from __future__ import annotations

from pathlib import Path

from ldp_telemetry.client import Client, InMemoryTransport
from ldp_telemetry.shared import TaskConfig

TASK = TaskConfig(
    task_id="words",
    mechanism="hh",
    epsilon=4.0,
    k=16,
    m=64,
    hash_seed=3,
    alphabet="abcdefghijklmnopqrstuvwxyz",
    max_length=8,
)


def test_record_sends_one_level_per_device(tmp_path: Path) -> None:
    transport = InMemoryTransport([TASK])
    levels_by_device = []
    for device in range(12):
        sdk = Client(
            "memory://hh",
            transport=transport,
            data_dir=tmp_path / str(device),
            reports_per_period=None,
            atexit_timeout=None,
            task_ids=["words"],
        )
        assert sdk.wait_for_tasks(timeout=10)
        assert sdk.record("words", "hello") and sdk.record("words", "world")
        assert not sdk.record("words", "Hello")  # outside the alphabet: refused, not raised
        assert sdk.close(10)
        reports = transport.reports("words")[-2:]
        levels_by_device.append({r.payload.level for r in reports})
        # The same device (same data_dir, same secret) keeps its level in a new session.
        again = Client(
            "memory://hh",
            transport=transport,
            data_dir=tmp_path / str(device),
            reports_per_period=None,
            atexit_timeout=None,
        )
        # The configuration fetched before is kept beside the queue: known at once.
        assert again.record("words", "abc") and again.close(10)
        assert transport.reports("words")[-1].payload.level in levels_by_device[-1]
    assert all(len(levels) == 1 for levels in levels_by_device)
    assert len(set().union(*levels_by_device)) > 1  # devices spread over the G = 4 levels
    sums = transport.sums("words")
    assert sums.total == 36
    assert transport.estimate("words", ["hello"]).n == 36
