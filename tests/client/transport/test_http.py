"""The network path against a fake collector on loopback: retries, drops, time bounds."""

from __future__ import annotations

import email.utils
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from ldp_telemetry.client import (
    Client,
    HTTPTransport,
    Request,
    Response,
    RetryPolicy,
    TransportError,
)
from ldp_telemetry.client.transport import retry_after
from ldp_telemetry.client.transport.http import DeadlineRetry
from ldp_telemetry.shared import TaskConfig
from tests.support.fake_collector import FAST_RETRY, FAST_TIMEOUTS, FakeCollector, make_tasks
from tests.support.servers import free_port

pytestmark = pytest.mark.timeout(60)
TASK_IDS = [task.task_id for task in make_tasks().values()]


def http_client(url: str, **options: object) -> Client:
    """Return a client with fast timeouts and retries, no budget limit, no exit hook."""
    options.setdefault("timeouts", FAST_TIMEOUTS)
    options.setdefault("retry", FAST_RETRY)
    options.setdefault("reports_per_period", None)
    if "tasks" not in options:  # know every task before recording, as task_ids gives
        options.setdefault("task_ids", list(TASK_IDS))
    sdk = Client(url, atexit_timeout=None, **options)
    if "tasks" not in options:
        assert sdk.wait_for_tasks(timeout=10)
    return sdk


@pytest.fixture
def dead_url() -> str:
    """Return a loopback URL where nothing listens."""
    return f"http://127.0.0.1:{free_port()}"  # this worker's: no other test's server is there


@pytest.fixture
def hanging_url() -> Iterator[str]:
    """Yield a URL that accepts connections (kernel backlog) and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


def test_upload_over_http_fetches_config_with_etag_and_gzips(
    fake_collector: FakeCollector, tasks: dict[str, TaskConfig]
) -> None:
    sdk = http_client(fake_collector.url, upload_key="upload-secret", task_ids=["t-cms"])
    assert sdk.record("t-cms", "hello") and sdk.record("t-cms", "world")
    assert sdk.flush(5)
    get, post = fake_collector.seen
    assert get.method == "GET" and get.path == "/v1/tasks/t-cms"
    assert "authorization" not in get.headers
    assert post.headers["content-encoding"] == "gzip"
    assert post.headers["content-type"] == "application/json"
    assert post.headers["authorization"] == "Bearer upload-secret"
    assert len(post.report_ids()) == 2 and len(fake_collector.backend.reports("t-cms")) == 2
    assert sdk.stats().sent == 2 and sdk.close(5)


def test_500_then_200_is_retried_with_the_same_bytes_and_counted_once(
    fake_collector: FakeCollector,
) -> None:
    fake_collector.then("status", 500)
    sdk = http_client(fake_collector.url)
    assert sdk.record("t-rr", True)
    assert sdk.flush(5)
    first, second = fake_collector.uploads()
    assert first.raw_body == second.raw_body
    assert len(fake_collector.backend.reports("t-rr")) == 1
    stats = sdk.stats()
    assert stats.sent == 1 and stats.retries == 1 and stats.failed_batches == 0
    sdk.close(5)


def test_503_with_retry_after_is_honoured(fake_collector: FakeCollector) -> None:
    fake_collector.then("status", 503, Retry_After="1")
    sdk = http_client(fake_collector.url)
    assert sdk.record("t-rr", False)
    assert sdk.flush(5)
    first, second = fake_collector.uploads()
    assert 1.0 <= second.time - first.time < 3.0
    assert sdk.stats().sent == 1 and sdk.close(5)


def test_a_retry_after_past_the_deadline_is_honoured_by_the_uploader(
    fake_collector: FakeCollector,
) -> None:
    # 507 answers Retry-After: 60 (PROTOCOL §5) while a call's deadline is 60 s: the call
    # gives up and the uploader must still wait that long, not its own shorter backoff.
    fake_collector.then("status", 507, Retry_After="2")
    policy = RetryPolicy(max_retries=3, backoff=0.05, backoff_max=0.2, jitter=0.01, deadline=1.0)
    sdk = http_client(fake_collector.url, retry=policy, flush_interval=0.05)
    assert sdk.record("t-rr", True)
    deadline = time.monotonic() + 10
    while len(fake_collector.uploads()) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    first, second = fake_collector.uploads()[:2]
    assert second.time - first.time >= 2.0
    assert first.raw_body == second.raw_body
    assert sdk.flush(5) and sdk.stats().sent == 1
    sdk.close(5)


def test_retry_after_takes_seconds_or_an_http_date() -> None:
    assert retry_after("7") == 7.0 and retry_after(" 0 ") == 0.0
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 28 <= (retry_after(later) or 0) <= 31
    assert retry_after("soon") is None and retry_after(None) is None


def test_a_read_timeout_is_retried(fake_collector: FakeCollector) -> None:
    fake_collector.then("hang")
    sdk = http_client(fake_collector.url)
    assert sdk.record("t-grr", "blue")
    assert sdk.flush(5)
    assert len(fake_collector.uploads()) == 2 and sdk.stats().sent == 1
    assert len(fake_collector.backend.reports("t-grr")) == 1
    sdk.close(5)


def test_400_drops_the_batch_without_retrying(fake_collector: FakeCollector) -> None:
    fake_collector.then("status", 400)
    sdk = http_client(fake_collector.url)
    assert sdk.record("t-cms", "a") and sdk.record("t-cms", "b")
    assert sdk.flush(5)  # the queue emptied: the batch was dropped
    assert len(fake_collector.uploads()) == 1
    stats = sdk.stats()
    assert stats.dropped == {"batch_rejected": 2} and stats.sent == 0 and stats.queued == 0
    assert sdk.flush(1) and len(fake_collector.uploads()) == 1
    sdk.close(5)


def test_per_report_rejections_are_counted(
    fake_collector: FakeCollector, tasks: dict[str, TaskConfig]
) -> None:
    stale = TaskConfig.create(task_id="t-cms", mechanism="cms", epsilon=4.0, k=16, m=64)
    sdk = http_client(fake_collector.url, tasks=[stale])  # another hash seed: outdated
    assert sdk.record("t-cms", "a")
    assert sdk.flush(5)
    stats = sdk.stats()
    assert stats.rejected == {"outdated_config": 1} and stats.sent == 0
    sdk.close(5)


def test_server_down_keeps_reports_queued_and_flush_is_bounded(dead_url: str) -> None:
    task = TaskConfig.create(task_id="t-rr", mechanism="rr", epsilon=1.0)
    sdk = http_client(dead_url, tasks=[task])
    assert sdk.record("t-rr", True)
    start = time.monotonic()
    assert sdk.flush(3) is False
    assert time.monotonic() - start < 4.0
    stats = sdk.stats()
    assert stats.queued == 1 and stats.failed_batches >= 1 and stats.retries >= 1
    assert sdk.record("t-cms", "x") is False  # its configuration cannot be fetched
    assert sdk.stats().dropped == {"task_unavailable": 1}
    sdk.close(1)


def test_server_hanging_after_connect_is_bounded(hanging_url: str) -> None:
    task = TaskConfig.create(task_id="t-rr", mechanism="rr", epsilon=1.0)
    sdk = http_client(
        hanging_url, tasks=[task], retry=RetryPolicy(max_retries=5, backoff=0.05, deadline=30.0)
    )
    assert sdk.record("t-rr", True)
    start = time.monotonic()
    assert sdk.record("t-grr", "red") is False  # config fetch bounded by timeouts.config
    assert time.monotonic() - start < 2.0
    assert sdk.flush(1.0) is False
    assert sdk.close(1.0) is False  # interrupts the uploader in its retries
    assert time.monotonic() - start < 5.0
    assert sdk.stats().dropped.get("closed") == 1


def test_close_with_10000_queued_and_a_dead_server_is_bounded(dead_url: str) -> None:
    task = TaskConfig.create(task_id="t-cms", mechanism="cms", epsilon=4.0, k=16, m=64)
    sdk = http_client(
        dead_url,
        tasks=[task],
        max_queue=20_000,
        flush_interval=60.0,
        retry=RetryPolicy(max_retries=50, backoff=0.5, deadline=60.0),
    )
    for i in range(10_000):
        assert sdk.record("t-cms", f"value-{i}")
    assert sdk.stats().queued == 10_000
    start = time.monotonic()
    assert sdk.close(timeout=1.0) is False
    assert time.monotonic() - start < 2.0
    assert sdk.stats().dropped == {"closed": 10_000}


def test_transport_deadline_and_close_interrupt_retry_waits(dead_url: str) -> None:
    transport = HTTPTransport(
        dead_url,
        timeouts=FAST_TIMEOUTS,
        retry=RetryPolicy(max_retries=20, backoff=0.2, deadline=60.0),
    )
    start = time.monotonic()
    with pytest.raises(TransportError) as caught:
        transport.handle(Request("GET", "/v1/tasks/x"), timeout=0.5)
    assert time.monotonic() - start < 1.5 and caught.value.retries >= 1
    transport.close()
    with pytest.raises(TransportError, match="closed"):
        transport.handle(Request("GET", "/v1/tasks/x"), timeout=5)


def test_a_dropped_connection_is_retried(fake_collector: FakeCollector) -> None:
    fake_collector.then("close")
    sdk = http_client(fake_collector.url)
    assert sdk.record("t-hcms", "x")
    assert sdk.flush(5)
    assert len(fake_collector.uploads()) == 2 and sdk.stats().sent == 1
    sdk.close(5)


def test_a_batch_sent_again_later_is_the_same_bytes(fake_collector: FakeCollector) -> None:
    fake_collector.failing = 503
    sdk = http_client(fake_collector.url, retry=RetryPolicy(max_retries=0, deadline=3.0))
    assert sdk.record("t-cms", "a") and sdk.record("t-cms", "b")
    assert sdk.flush(5) is False  # the transport gave up: the batch stays queued
    fake_collector.failing = 0
    assert sdk.flush(5)
    first, second = fake_collector.uploads()
    assert first.raw_body == second.raw_body and len(second.report_ids()) == 2
    assert sdk.stats().sent == 2 and sdk.stats().failed_batches == 1
    sdk.close(5)


def test_close_interrupts_a_retry_after_wait(
    fake_collector: FakeCollector, monkeypatch: pytest.MonkeyPatch
) -> None:
    sleeping = threading.Event()
    original = DeadlineRetry.sleep

    def sleep(self: DeadlineRetry, response: object = None) -> None:
        sleeping.set()  # the interrupt is an Event: set before the wait, it still ends it
        original(self, response)

    monkeypatch.setattr(DeadlineRetry, "sleep", sleep)
    fake_collector.failing = 503
    fake_collector.then("status", 503, Retry_After="30")
    transport = HTTPTransport(
        fake_collector.url, timeouts=FAST_TIMEOUTS, retry=RetryPolicy(max_retries=3, deadline=60.0)
    )
    outcome: list[BaseException] = []

    def upload() -> None:
        try:
            transport.handle(Request("POST", "/v1/tasks/t-rr/reports", body=b"{}"), timeout=60)
        except TransportError as error:
            outcome.append(error)

    worker = threading.Thread(target=upload)
    worker.start()
    assert sleeping.wait(5)  # the worker now waits on Retry-After: 30
    start = time.monotonic()
    transport.close()
    worker.join(5)
    assert not worker.is_alive() and time.monotonic() - start < 1.0
    assert len(outcome) == 1 and "the transport was closed" in str(outcome[0])
    assert len(fake_collector.uploads()) == 1


@pytest.mark.parametrize("limit", [{"max_body": 3000}, {"max_reports": 7}])
def test_413_halves_the_batch_and_delivers_everything(
    fake_collector: FakeCollector, limit: dict[str, int]
) -> None:
    for name, value in limit.items():
        setattr(fake_collector, name, value)
    sdk = http_client(fake_collector.url, batch_size=100, flush_interval=60.0)
    for i in range(60):
        assert sdk.record("t-cms", f"value-{i}")
    assert sdk.flush(10)
    stats = sdk.stats()
    assert stats.sent == 60 and stats.dropped == {} and stats.queued == 0
    assert len(fake_collector.backend.reports("t-cms")) == 60
    uploads = fake_collector.uploads()
    assert len(uploads[0].report_ids()) == 60  # one batch at first: then halved on 413
    delivered = [
        u
        for u in uploads
        if len(u.body) <= (fake_collector.max_body or len(u.body))
        and len(u.report_ids()) <= (fake_collector.max_reports or 60)
    ]
    assert sum(len(u.report_ids()) for u in delivered) == 60
    assert len(uploads) - len(delivered) <= 4  # 60 -> 30 -> 15 -> 7 (-> 3): a few 413s
    sdk.close(5)


def test_a_single_report_refused_with_413_is_dropped(fake_collector: FakeCollector) -> None:
    fake_collector.max_body = 10  # no report fits
    sdk = http_client(fake_collector.url, flush_interval=60.0)
    for i in range(8):
        assert sdk.record("t-hcms", f"value-{i}")
    assert sdk.flush(10)  # the queue emptied: the reports could never be delivered
    stats = sdk.stats()
    assert stats.dropped == {"batch_rejected": 8} and stats.sent == 0 and stats.queued == 0
    assert [len(u.report_ids()) for u in fake_collector.uploads()] == [8, 4, 2] + [1] * 8
    sdk.close(5)


def test_batches_are_bounded_by_bytes(fake_collector: FakeCollector) -> None:
    fake_collector.max_body = 2048
    sdk = http_client(fake_collector.url, max_batch_bytes=2048, flush_interval=60.0)
    for i in range(40):
        assert sdk.record("t-cms", f"value-{i}")
    assert sdk.flush(10)
    uploads = fake_collector.uploads()
    assert len(uploads) > 1 and all(len(u.body) <= 2048 for u in uploads)  # no 413
    assert sdk.stats().sent == 40 and sdk.stats().dropped == {}
    sdk.close(5)


def test_large_sketches_fit_the_collectors_4_mib_limit(fake_collector: FakeCollector) -> None:
    # m = 65536: ~11 KB per report, 500 of them would be a ~5.5 MB body.
    big = TaskConfig.create(task_id="t-big", mechanism="cms", epsilon=4.0, k=16, m=65536)
    fake_collector.backend.add_task(big)
    fake_collector.max_body = 4 << 20
    sdk = http_client(
        fake_collector.url,
        tasks=[big],
        flush_interval=60.0,
        max_queue=1000,
        max_queue_bytes=64 << 20,
    )
    for i in range(500):
        assert sdk.record("t-big", f"value-{i}")
    assert sdk.flush(30)
    uploads = fake_collector.uploads()
    assert all(len(u.body) <= 1 << 20 for u in uploads) and len(uploads) >= 5
    assert sdk.stats().sent == 500 and len(fake_collector.backend.reports("t-big")) == 500
    sdk.close(5)


def test_request_and_response_headers_are_found_without_case() -> None:
    request = Request("GET", "/v1/tasks/t", {"if-none-match": '"x"'})
    assert request.header("If-None-Match") == '"x"' and request.header("ETag") is None
    assert Response(200, {"ETag": '"x"'}).header("etag") == '"x"'
