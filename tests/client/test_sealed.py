"""A sealed task in the SDK: only ciphertext is queued, a resend is the same bytes, and a
sealed task served without its key is never recorded in the clear."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from ldp_telemetry.client import Client, InMemoryTransport
from ldp_telemetry.shared import TaskConfig
from ldp_telemetry.shared.sealing import SealKey, new_private_key, public_key_bytes

pytestmark = pytest.mark.timeout(60)
DOMAIN = ["red", "green", "blue"]


def _client(transport: InMemoryTransport, data_dir: Path | None = None) -> Client:
    sdk = Client(
        "memory://test",
        transport=transport,
        task_ids=transport.task_ids(),
        reports_per_period=None,
        atexit_timeout=None,
        data_dir=data_dir,
        flush_interval=3600,  # nothing leaves before flush(): the queue can be looked at
    )
    assert sdk.wait_for_tasks(timeout=10)
    return sdk


def test_the_queue_holds_only_sealed_reports(tmp_path: Path) -> None:
    private = new_private_key()
    key = SealKey("k1", public_key_bytes(private))
    task = TaskConfig(
        task_id="colors", mechanism="grr", epsilon=2.0, domain=DOMAIN, sealed=True, seal=key
    )
    transport = InMemoryTransport([task], keys={"k1": private})
    sdk = _client(transport, tmp_path / "sdk")
    assert all(sdk.record("colors", value) for value in DOMAIN)
    queued = _queued_texts(tmp_path / "sdk")
    assert len(set(queued)) == 3  # the queue, and the memo that resends the same report
    assert all(
        set(json.loads(t)) == {"report_id", "fingerprint", "time", "key_id", "sealed"}
        for t in queued
    )
    for path in (tmp_path / "sdk").iterdir():
        assert b'"index"' not in path.read_bytes(), path  # the payload never touches disk
    assert sdk.flush(5)
    assert len(transport.reports("colors")) == 3 and sdk.stats().rejected == {}
    sdk.close(5)


def test_a_sealed_task_without_its_key_is_not_recorded() -> None:
    task = TaskConfig(task_id="colors", mechanism="grr", epsilon=2.0, domain=DOMAIN, sealed=True)
    transport = InMemoryTransport([task])  # serves it without "seal"
    sdk = Client(
        "memory://test",
        transport=transport,
        task_ids=["colors"],
        reports_per_period=None,
        atexit_timeout=None,
    )
    assert not sdk.wait_for_tasks(timeout=1)
    assert not sdk.record("colors", "red")
    assert sdk.stats().dropped == {"task_unavailable": 1}
    assert not [r for r in transport.requests if r.method == "POST"]
    sdk.close(5)


# X25519 public keys of low order (RFC 7748 §5's list): 0, 1, and a point of order 8.
LOW_ORDER = [
    bytes(32),
    bytes([1]) + bytes(31),
    bytes.fromhex("e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800"),
]


@pytest.mark.parametrize("public_key", LOW_ORDER)
def test_a_low_order_seal_key_is_refused_when_fetched(public_key: bytes) -> None:
    """RFC 9180 §7.1.4 (PROTOCOL.md §10): a key whose shared secret is all zeros is refused
    with its task, counted, and nothing is recorded or sent."""
    task = TaskConfig(
        task_id="colors",
        mechanism="grr",
        epsilon=2.0,
        domain=DOMAIN,
        sealed=True,
        seal=SealKey("k0", public_key),
    )
    transport = InMemoryTransport([task])
    sdk = Client(
        "memory://test",
        transport=transport,
        task_ids=["colors"],
        reports_per_period=None,
        atexit_timeout=None,
    )
    assert not sdk.wait_for_tasks(timeout=1)
    assert not sdk.record("colors", "red")
    assert sdk.stats().dropped == {"task_unavailable": 1}
    assert sdk.stats().refused_tasks.get("invalid", 0) >= 1
    assert not [r for r in transport.requests if r.method == "POST"]
    sdk.close(5)


def _queued_texts(data_dir: Path) -> list[str]:
    """Return every text column of the on-disk queue (whatever its table is called)."""
    texts: list[str] = []
    for path in data_dir.glob("*.sqlite3"):
        with sqlite3.connect(path) as conn:
            tables = [
                n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            ]
            for table in tables:
                for row in conn.execute(f"SELECT * FROM {table}"):
                    texts += [v for v in row if isinstance(v, str) and v.startswith('{"report_id"')]
    return texts
