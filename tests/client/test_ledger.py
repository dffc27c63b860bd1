"""The privacy ledger (ldp_telemetry.client.privacy_ledger) through the one rule (admit_to), in both
storages."""

from __future__ import annotations

import hashlib
import hmac
import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ldp_telemetry.client import Client, ConfigurationError, InMemoryTransport
from ldp_telemetry.client.budget import lookup_key
from ldp_telemetry.client.privacy_ledger import Limits, charge_of
from ldp_telemetry.client.sqlite_storage import SqliteStorage
from ldp_telemetry.client.storage import Admission, MemoryStorage, Pending, Slot, Storage
from ldp_telemetry.shared import TaskConfig
from ldp_telemetry.shared.wire import canonical_json

DAY = 86_400
SECRET = bytes(range(32))
WIDE = 1000  # reports per period: high enough that only the ledger refuses
_ids = itertools.count()


def longitudinal(task_id: str = "t", epsilon_inf: float = 1.0, flip: float = 0.2) -> TaskConfig:
    return TaskConfig.create(
        task_id=task_id,
        mechanism="grr",
        domain=["a", "b", "c", "d"],
        longitudinal={"epsilon_inf": epsilon_inf, "flip": flip},
    )


def plain(task_id: str = "t", epsilon: float = 1.0) -> TaskConfig:
    return TaskConfig.create(task_id=task_id, mechanism="grr", domain=["a", "b"], epsilon=epsilon)


@pytest.fixture(params=["memory", "disk"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Storage]:
    made: Storage = (
        MemoryStorage(max_queue=1000, max_bytes=1 << 20)
        if request.param == "memory"
        else SqliteStorage(tmp_path, max_queue=1000, max_bytes=1 << 20)
    )
    yield made
    made.close()


class Device:
    """Records through a storage as Client.record does, counting what was privatized."""

    def __init__(self, storage: Storage, limits: Limits) -> None:
        self.storage, self.limits, self.made = storage, limits, 0

    def record(self, task: TaskConfig, value: Any, now: float = 0.0) -> Admission:
        canonical = task.mechanism_object.canonical(value)
        period = task.floor_time(now)
        slot = Slot(
            task.task_id,
            period,
            period + task.time_precision,
            lookup_key(SECRET, task, period, canonical),
        )
        charge = charge_of(task, SECRET, canonical, now, self.limits.epsilon_period)
        return self.storage.admit(slot, charge, self.limits, self._make(task))

    def _make(self, task: TaskConfig) -> Any:
        def make() -> Pending:
            self.made += 1
            return Pending(task.task_id, f"id-{next(_ids)}", "{}")

        return make


def test_the_configuration_is_what_the_permanent_response_depends_on() -> None:
    first = longitudinal()
    value = first.mechanism_object.canonical("a")
    charge = charge_of(first, SECRET, value, 0.0, DAY)
    assert charge.permanent is not None
    assert charge.permanent.epsilon_inf == first.mechanism_object.effective_epsilon_inf
    assert charge.epsilon == first.effective_epsilon
    flip_only = charge_of(longitudinal(flip=0.25), SECRET, value, 0.0, DAY).permanent
    assert flip_only is not None and flip_only.configuration != charge.permanent.configuration
    assert flip_only.value_key == charge.permanent.value_key  # per value across configurations
    # Fields the permanent response does not depend on are not part of it.
    wider = TaskConfig.from_dict({**first.to_dict(), "fingerprint": "", "min_batch_size": 7})
    assert wider.fingerprint != first.fingerprint
    again = charge_of(wider, SECRET, value, 0.0, DAY).permanent
    assert again is not None and again.configuration == charge.permanent.configuration
    other = charge_of(first, SECRET, first.mechanism_object.canonical("b"), 0.0, DAY).permanent
    assert other is not None and other.value_key != charge.permanent.value_key
    assert charge_of(plain(), SECRET, b"\x00\x00\x00\x00", 0.0, DAY).permanent is None


def test_the_configuration_digest_is_as_protocol_section_4_says() -> None:
    # C = the first 32 hex digits of SHA-256(mechanism ‖ "\0" ‖ P), P as PROTOCOL §3.9 says.
    task = longitudinal()
    common = {"task_id", "mechanism", "time_precision", "min_batch_size", "fingerprint"}
    common |= {"protocol", "derived", "attack_success"}  # not mechanism fields (§3.9's F)
    fields = {k: v for k, v in task.to_dict().items() if k not in common and "effective" not in k}
    hashed = f"{task.mechanism}\x00{canonical_json(fields)}"
    expected = hashlib.sha256(hashed.encode()).hexdigest()[:32]
    permanent = charge_of(task, SECRET, b"\x00\x00\x00\x00", 0.0, DAY).permanent
    assert permanent is not None and permanent.configuration == expected
    message = b"ldp-telemetry ledger\x00t\x00\x00\x00\x00\x00"
    assert permanent.value_key == hmac.new(SECRET, message, hashlib.sha256).digest()


def test_a_republished_configuration_is_refused_by_default(storage: Storage) -> None:
    device = Device(storage, Limits(WIDE))
    assert device.record(longitudinal(), "a") is Admission.NEW
    assert device.record(longitudinal(), "b") is Admission.NEW  # another value, same layer
    for changed in (longitudinal(flip=0.3), longitudinal(epsilon_inf=2.0)):
        # Refused whatever the value, one already answered or not: nothing privatized.
        assert device.record(changed, "a") is Admission.CONFIG_CHANGED
        assert device.record(changed, "c") is Admission.CONFIG_CHANGED
    assert device.made == 2
    # The collector going back to the adopted configuration gets the same PRRs: allowed.
    assert device.record(longitudinal(), "c", now=DAY) is Admission.NEW
    assert device.record(longitudinal(), "a", now=DAY) is Admission.NEW


def test_the_app_may_allow_republished_epsilon_inf(storage: Storage) -> None:
    # 1.0 + 1.0 of later configurations: exactly the cap is allowed, a third is not.
    device = Device(storage, Limits(WIDE, republished_epsilon_inf=2.0))
    flips = [0.2, 0.25, 0.3, 0.35]
    assert [device.record(longitudinal(flip=f), "a") for f in flips] == [
        Admission.NEW,
        Admission.NEW,
        Admission.NEW,
        Admission.CONFIG_CHANGED,
    ]
    # An adopted configuration stays usable, for any value.
    assert device.record(longitudinal(flip=0.25), "d") is Admission.NEW
    # A later configuration whose ε∞ alone passes the cap is refused.
    other = Device(storage, Limits(WIDE, republished_epsilon_inf=1.5))
    assert other.record(longitudinal("u"), "a") is Admission.NEW
    assert other.record(longitudinal("u", epsilon_inf=2.0), "a") is Admission.CONFIG_CHANGED
    unlimited = Device(storage, Limits(WIDE, republished_epsilon_inf=None, max_epsilon_inf=None))
    assert all(
        unlimited.record(longitudinal("v", flip=0.1 + i / 100), "a") is Admission.NEW
        for i in range(10)
    )


def test_a_permanent_layer_cannot_be_republished_away(storage: Storage) -> None:
    device = Device(storage, Limits(WIDE, republished_epsilon_inf=None))
    assert device.record(longitudinal(), "a") is Admission.NEW
    assert device.record(plain(), "a") is Admission.CONFIG_CHANGED  # ε per period, no bound
    # The other way round is allowed: a task without a permanent layer gains one.
    assert device.record(plain("w"), "a") is Admission.NEW
    assert device.record(longitudinal("w"), "a") is Admission.NEW


def test_the_device_lifetime_epsilon_inf_counts_each_permanent_response(storage: Storage) -> None:
    device = Device(storage, Limits(WIDE, max_epsilon_inf=3.0))
    tasks = [longitudinal(f"q{i}") for i in range(5)]  # the same question under new ids
    assert [device.record(task, "a") for task in tasks] == [Admission.NEW] * 3 + [
        Admission.EPSILON_INF_EXHAUSTED
    ] * 2
    assert device.made == 3
    # A value whose PRR exists costs nothing more, the next day too; a new value does.
    assert device.record(tasks[0], "a", now=DAY) is Admission.NEW
    assert device.record(tasks[0], "b", now=DAY) is Admission.EPSILON_INF_EXHAUSTED


def test_the_device_epsilon_per_period(storage: Storage) -> None:
    device = Device(storage, Limits(WIDE, max_epsilon_per_period=2.5))
    assert device.record(plain("p", 1.0), "a") is Admission.NEW
    assert device.record(plain("p", 1.0), "a") is Admission.REUSED  # memoized: free
    assert device.record(plain("p2", 1.0), "a") is Admission.NEW
    assert device.record(plain("p3", 1.0), "a") is Admission.EPSILON_EXHAUSTED
    assert device.record(plain("p3", 0.5), "a") is Admission.NEW  # exactly 2.5
    assert device.record(plain("p3", 1.0), "a", now=DAY) is Admission.NEW  # a new period


def test_the_ledger_survives_a_restart_on_disk(tmp_path: Path) -> None:
    limits = Limits(WIDE, max_epsilon_inf=2.0)
    first = SqliteStorage(tmp_path, max_queue=100, max_bytes=1 << 20)
    assert Device(first, limits).record(longitudinal(), "a") is Admission.NEW
    first.close()
    second = SqliteStorage(tmp_path, max_queue=100, max_bytes=1 << 20)
    device = Device(second, limits)
    assert device.record(longitudinal(flip=0.3), "a", now=DAY) is Admission.CONFIG_CHANGED
    assert device.record(longitudinal(), "b", now=DAY) is Admission.NEW
    assert device.record(longitudinal(), "c", now=DAY) is Admission.EPSILON_INF_EXHAUSTED
    second.close()
    stored = (tmp_path / "queue.sqlite3").read_bytes()
    wal = tmp_path / "queue.sqlite3-wal"
    stored += wal.read_bytes() if wal.exists() else b""
    assert SECRET not in stored


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("republished_epsilon_inf", -1.0),
        ("republished_epsilon_inf", float("nan")),
        ("max_epsilon_inf", 0.0),
        ("max_epsilon_inf", float("inf")),
        ("max_epsilon_per_period", "4"),
        ("max_epsilon_per_period", True),
        ("epsilon_period", 0),
        ("epsilon_period", 1.5),
    ],
)
def test_bad_caps_raise_at_construction(name: str, value: object) -> None:
    with pytest.raises(ConfigurationError, match=name):
        Client("memory://", transport=InMemoryTransport(), atexit_timeout=None, **{name: value})


def test_caps_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(os.environ, "LDP_MAX_EPSILON_INF", "none")
    monkeypatch.setitem(os.environ, "LDP_REPUBLISHED_EPSILON_INF", "4")
    monkeypatch.setitem(os.environ, "LDP_MAX_EPSILON_PER_PERIOD", "8")
    monkeypatch.setitem(os.environ, "LDP_EPSILON_PERIOD", "3600")
    sdk = Client("memory://", transport=InMemoryTransport(), atexit_timeout=None)
    assert sdk.settings.limits == Limits(1, 4.0, None, 8.0, 3600)
    sdk.close()
    default = Client(
        "memory://", transport=InMemoryTransport(), atexit_timeout=None, max_epsilon_inf=64
    )
    assert default.settings.limits.republished_epsilon_inf == 4.0  # still from the env
    default.close()


def test_the_sdk_counts_config_changed_in_stats(tmp_path: Path) -> None:
    transport = InMemoryTransport([longitudinal()])

    def sdk(task: TaskConfig) -> Client:
        return Client(
            "memory://", transport=transport, tasks=[task], data_dir=tmp_path, atexit_timeout=None
        )

    first = sdk(longitudinal())
    assert first.record("t", "a")
    first.close(5)
    republished = sdk(longitudinal(flip=0.3))  # restarted, and the task re-published
    assert not republished.record("t", "b")
    assert republished.stats().dropped == {"config_changed": 1}
    republished.close(5)
