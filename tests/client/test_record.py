"""record(): every mechanism through the in-memory transport, drops, and embedding safety."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ldp_telemetry.client import Client, InMemoryTransport, Request, Response, TransportError
from ldp_telemetry.shared import CountMeanSketch, RandomizedResponse, TaskConfig
from tests.support.fake_collector import make_tasks

pytestmark = pytest.mark.timeout(60)


def memory_client(transport: InMemoryTransport, *, ready: bool = True, **options: object) -> Client:
    """Return a client on ``transport`` with no budget limit and no exit hook.

    ``ready``: it knows every task the transport serves before it is returned (fetched by
    its uploader thread, as an app naming them in ``task_ids`` gets them).
    """
    options.setdefault("reports_per_period", None)
    if ready:
        options.setdefault("task_ids", transport.task_ids())
    sdk = Client("memory://test", transport=transport, atexit_timeout=None, **options)
    if ready:
        assert sdk.wait_for_tasks(timeout=10)
    return sdk


@pytest.mark.parametrize(
    ("kind", "values"),
    [
        ("rr", [True, False, 1, np.True_]),
        ("grr", ["red", "green", "blue"]),
        ("cms", ["a", "b", "ünïcødé", ""]),
        ("hcms", ["a", "b", "c"]),
    ],
)
def test_every_mechanism_round_trips(
    tasks: dict[str, TaskConfig], kind: str, values: list[object]
) -> None:
    task = tasks[kind]
    transport = InMemoryTransport(tasks.values())
    sdk = memory_client(transport)
    distinct = len({repr(bool(v)) if kind == "rr" else v for v in values})
    assert all(sdk.record(task.task_id, value) for value in values)
    assert sdk.flush(5)
    reports = transport.reports(task.task_id)
    assert len(reports) == distinct  # the same value in a period is one report
    assert {r.fingerprint for r in reports} == {task.fingerprint}
    assert {r.time for r in reports} == {task.floor_time(time.time())}
    assert sdk.stats().sent == distinct and sdk.stats().dropped == {}
    assert sdk.close(5)


def test_config_is_fetched_once_with_the_transport(tasks: dict[str, TaskConfig]) -> None:
    transport = InMemoryTransport(tasks.values())
    sdk = memory_client(transport, ready=False)
    assert sdk.record("t-cms", "a") is False  # unknown yet: fetched in the background
    assert sdk.wait_for_tasks(["t-cms"], timeout=10)
    for value in ("a", "b", "c"):
        assert sdk.record("t-cms", value)
    gets = [r for r in transport.requests if r.method == "GET"]
    assert [r.path for r in gets] == ["/v1/tasks/t-cms"]
    assert sdk.stats().dropped == {"task_unavailable": 1}
    sdk.close(5)


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        ("rr", "yes"),
        ("rr", 2),
        ("rr", None),
        ("grr", "purple"),
        ("grr", 3),
        ("cms", b"bytes"),
        ("hcms", 17),
        ("cms", ["list"]),
    ],
)
def test_invalid_values_are_dropped_and_counted(
    tasks: dict[str, TaskConfig], kind: str, value: object
) -> None:
    sdk = memory_client(InMemoryTransport(tasks.values()))
    assert sdk.record(tasks[kind].task_id, value) is False
    assert sdk.stats().dropped == {"invalid_value": 1} and sdk.stats().queued == 0
    sdk.close(1)


def test_rr_accepts_numpy_answers_as_the_mechanism_does(tasks: dict[str, TaskConfig]) -> None:
    transport = InMemoryTransport(tasks.values())
    sdk = memory_client(transport)
    mechanism = tasks["rr"].mechanism_object
    assert isinstance(mechanism, RandomizedResponse)
    for value in (np.int64(1), np.int64(0), np.bool_(True), np.uint8(0)):
        mechanism.privatize(value)
        assert sdk.record("t-rr", value) is True
    assert sdk.record("t-rr", np.int64(2)) is False
    assert sdk.stats().dropped == {"invalid_value": 1}
    assert sdk.flush(5)
    assert len(transport.reports("t-rr")) == 2  # np.int64(1) is True's report, 0 is False's
    sdk.close(5)


def test_unknown_task_is_dropped_and_not_refetched_each_time(tasks: dict[str, TaskConfig]) -> None:
    transport = InMemoryTransport(tasks.values())
    sdk = memory_client(transport, ready=False)
    assert sdk.record("no-such-task", True) is False
    assert sdk.wait_for_tasks(["no-such-task"], timeout=0.5) is False  # fetched, 404
    assert sdk.record("no-such-task", True) is False
    assert sdk.record("bad id with spaces", True) is False
    assert sdk.record(42, True) is False  # a task id that is not a str
    assert sdk.stats().dropped == {"task_unavailable": 4}
    assert len([r for r in transport.requests if r.method == "GET"]) == 1
    sdk.close(1)


def test_pinned_tasks_are_never_fetched(tasks: dict[str, TaskConfig]) -> None:
    transport = InMemoryTransport(tasks.values())
    sdk = memory_client(transport, ready=False, tasks=[tasks["rr"]])
    assert sdk.record("t-rr", True)
    assert sdk.flush(5)
    assert [r.method for r in transport.requests] == ["POST"]
    sdk.close(1)


def test_queue_full_refuses_new_reports_without_blocking(tasks: dict[str, TaskConfig]) -> None:
    sdk = memory_client(InMemoryTransport(tasks.values()), max_queue=5, flush_interval=60.0)
    results = [sdk.record("t-cms", f"value-{i}") for i in range(8)]
    assert results == [True] * 5 + [False] * 3
    stats = sdk.stats()
    assert stats.queued == 5 and stats.dropped == {"queue_full": 3}
    sdk.close(5)


class BrokenTransport:
    """A transport that fails in every way a custom one could."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.calls = 0

    def handle(self, request: Request, *, timeout: float) -> Response:
        self.calls += 1
        raise self.error

    def close(self) -> None:
        raise RuntimeError("close failed too")


@pytest.mark.parametrize("error", [RuntimeError("boom"), TransportError("down"), MemoryError()])
def test_a_broken_transport_never_raises(tasks: dict[str, TaskConfig], error: Exception) -> None:
    broken = BrokenTransport(error)
    sdk = Client("memory://test", transport=broken, tasks=[tasks["rr"]], atexit_timeout=None)
    assert sdk.record("t-cms", "x") is False  # its config cannot be fetched
    assert sdk.record("t-rr", True) is True
    assert sdk.flush(2) is False
    stats = sdk.stats()
    assert stats.failed_batches >= 1 and stats.queued == 1 and stats.sent == 0
    assert stats.dropped == {"task_unavailable": 1}
    assert sdk.close(1) is False
    assert sdk.stats().dropped["closed"] == 1


class GarbageTransport:
    """A transport that answers nonsense."""

    def handle(self, request: Request, *, timeout: float) -> Response:
        return "not a response"

    def close(self) -> None:
        pass


def test_a_transport_answering_garbage_never_raises(tasks: dict[str, TaskConfig]) -> None:
    sdk = Client(
        "memory://test", transport=GarbageTransport(), tasks=[tasks["grr"]], atexit_timeout=None
    )
    assert sdk.record("t-cms", "x") is False
    assert sdk.record("t-grr", "red") is True
    assert sdk.flush(2) is False
    sdk.close(1)


class BlockingTransport:
    """A collector that never answers: every request blocks until ``close``."""

    def __init__(self) -> None:
        self.release, self.entered = threading.Event(), threading.Event()
        self.requests: list[Request] = []

    def handle(self, request: Request, *, timeout: float) -> Response:
        self.requests.append(request)
        self.entered.set()
        self.release.wait()  # forever, as far as the test is concerned
        raise TransportError("closed")

    def close(self) -> None:
        self.release.set()


def records_in_a_thread(sdk: Client, values: list[str]) -> list[bool]:
    """Record ``values`` on another thread; return the results, or fail if it blocks."""
    results: list[bool] = []
    done = threading.Event()

    def run() -> None:
        results.extend(sdk.record("t-cms", value) for value in values)
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(5), "record() waited (for the network?)"
    return results


def test_record_never_touches_the_network(tasks: dict[str, TaskConfig]) -> None:
    blocking = BlockingTransport()
    sdk = Client(
        "memory://test",
        transport=blocking,
        tasks=[tasks["cms"]],
        atexit_timeout=None,
        reports_per_period=None,
        batch_size=10,
        flush_interval=60.0,
    )
    assert records_in_a_thread(sdk, [f"v{i}" for i in range(9)]) == [True] * 9
    assert blocking.requests == []  # nothing is sent before a batch is full or a flush
    assert sdk.flush(0.1) is False
    assert blocking.entered.wait(5)  # the uploader is now stuck in the transport...
    assert records_in_a_thread(sdk, [f"w{i}" for i in range(50)]) == [True] * 50  # not record
    assert len(blocking.requests) == 1 and sdk.stats().queued == 59
    blocking.close()
    sdk.close(1)


def test_disabled_client_records_nothing_and_clears_the_queue(tasks: dict[str, TaskConfig]) -> None:
    transport = InMemoryTransport(tasks.values())
    sdk = memory_client(transport, flush_interval=60.0)
    assert sdk.record("t-rr", True)
    sdk.set_enabled(False)
    assert sdk.stats().queued == 0 and sdk.stats().dropped == {"disabled": 1}
    assert sdk.record("t-rr", False) is False
    assert sdk.flush(1) is True
    assert sdk.close(1) is True
    assert transport.requests == [r for r in transport.requests if r.method == "GET"]
    off = memory_client(transport, enabled=False)
    assert off.record("t-rr", True) is False and off.stats().dropped == {}
    off.close(1)


def test_kill_switch_from_environment(
    tasks: dict[str, TaskConfig], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LDP_DISABLED", "1")
    sdk = memory_client(InMemoryTransport(tasks.values()))
    assert sdk.enabled is False and sdk.record("t-rr", True) is False
    sdk.close(1)


def test_record_after_close_is_counted(tasks: dict[str, TaskConfig]) -> None:
    sdk = memory_client(InMemoryTransport(tasks.values()))
    assert sdk.close(1) and sdk.close(1)
    assert sdk.record("t-rr", True) is False
    assert sdk.stats().dropped == {"closed": 1}


def test_problems_are_logged_once_without_the_value(
    tasks: dict[str, TaskConfig], caplog: pytest.LogCaptureFixture
) -> None:
    sdk = memory_client(InMemoryTransport(tasks.values()))
    with caplog.at_level(logging.DEBUG, logger="ldp_telemetry.client"):
        for _ in range(3):
            sdk.record("t-grr", "CANARY-not-in-domain")
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "t-grr" in warnings[0].getMessage()
    assert "CANARY" not in caplog.text
    sdk.close(1)


def test_concurrent_records_respect_the_budget(tasks: dict[str, TaskConfig]) -> None:
    transport = InMemoryTransport(tasks.values())
    sdk = Client(
        "memory://test",
        transport=transport,
        reports_per_period=1,
        atexit_timeout=None,
        task_ids=["t-cms"],
    )
    assert sdk.wait_for_tasks(timeout=10)
    start = threading.Barrier(8)
    results: list[bool] = []

    def worker(i: int) -> None:
        start.wait()
        results.append(sdk.record("t-cms", f"thread-{i}"))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert sorted(results) == [False] * 7 + [True]
    assert sdk.flush(5) and len(transport.reports("t-cms")) == 1
    assert sdk.stats().dropped == {"budget_exhausted": 7}
    sdk.close(1)


def wait_until(condition: Callable[[], bool], timeout: float) -> bool:
    """Poll ``condition`` until it holds or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return False


def test_the_uploader_wakes_on_batch_size(tasks: dict[str, TaskConfig]) -> None:
    transport = InMemoryTransport(tasks.values())
    sdk = memory_client(transport, batch_size=10, flush_interval=60.0)
    for i in range(9):
        sdk.record("t-cms", f"v{i}")
    time.sleep(0.2)
    assert transport.reports("t-cms") == []  # below batch size, before the interval
    sdk.record("t-cms", "v9")
    assert wait_until(lambda: len(transport.reports("t-cms")) == 10, 5)
    sdk.close(1)


def test_the_uploader_wakes_on_time(tasks: dict[str, TaskConfig]) -> None:
    transport = InMemoryTransport(tasks.values())
    sdk = memory_client(transport, batch_size=100, flush_interval=0.2)
    sdk.record("t-rr", True)
    assert wait_until(lambda: len(transport.reports("t-rr")) == 1, 5)
    sdk.close(1)


ANYTHING = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text() | st.binary(),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(), children, max_size=3)
    ),
    max_leaves=5,
)


@pytest.fixture(scope="module")
def long_lived() -> Iterator[Client]:
    """Yield one client for the property test (hypothesis reuses it across examples)."""
    sdk = memory_client(
        InMemoryTransport(make_tasks().values()), max_queue=100_000, flush_interval=60.0
    )
    yield sdk
    sdk.close(1)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(task_id=st.sampled_from(["t-rr", "t-grr", "t-cms", "t-hcms"]) | ANYTHING, value=ANYTHING)
def test_record_never_raises(long_lived: Client, task_id: object, value: object) -> None:
    assert long_lived.record(task_id, value) in (True, False)


def test_privatization_uses_the_os_csprng(
    tasks: dict[str, TaskConfig], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[object] = []
    for mechanism in (RandomizedResponse, CountMeanSketch):
        original = mechanism.privatize

        def spy(self: object, value: object, rng: object = None, _original: Any = original) -> Any:
            seen.append(rng)
            return _original(self, value, rng)

        monkeypatch.setattr(mechanism, "privatize", spy)
    sdk = memory_client(InMemoryTransport(tasks.values()))
    assert sdk.record("t-rr", True) and sdk.record("t-cms", "x")
    assert seen == [None, None]  # rng=None: shared draws from os.urandom / secrets
    sdk.close(1)
