"""The raw value never leaves record(): not in data_dir, the logs, or any uploaded body."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from ldp_telemetry.client import Client
from ldp_telemetry.shared import TaskConfig
from tests.support.fake_collector import FAST_RETRY, FAST_TIMEOUTS, FakeCollector

pytestmark = pytest.mark.timeout(60)
CANARY = "CANARY-7f3a9c-do-not-leak"


def files_containing(folder: Path, needle: bytes) -> list[Path]:
    """Return every file under ``folder`` whose bytes contain ``needle``."""
    return [path for path in folder.rglob("*") if path.is_file() and needle in path.read_bytes()]


def test_raw_value_is_nowhere(
    fake_collector: FakeCollector,
    tasks: dict[str, TaskConfig],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake_collector.failing = 503
    options = {
        "data_dir": tmp_path,
        "timeouts": FAST_TIMEOUTS,
        "retry": FAST_RETRY,
        "reports_per_period": None,
        "atexit_timeout": None,
    }
    with caplog.at_level(logging.DEBUG):
        first = Client(fake_collector.url, **options)
        assert first.wait_for_tasks(["t-cms", "t-hcms", "t-grr"], timeout=10)
        assert first.record("t-cms", CANARY) and first.record("t-hcms", CANARY)
        assert first.record("t-grr", CANARY) is False  # not in the domain
        assert first.record("t-cms", CANARY.encode()) is False  # wrong type
        assert first.flush(5) is False
        assert first.stats().failed_batches == 1 and first.stats().queued == 2
        assert first.close(0.5) is False
        assert files_containing(tmp_path, CANARY.encode()) == []
        fake_collector.failing = 0
        assert len(list(tmp_path.rglob("*"))) >= 2  # the secret and the queue were written
        second = Client(fake_collector.url, **options)
        assert second.flush(5) and second.stats().sent == 2
        assert second.close(5)
    assert files_containing(tmp_path, CANARY.encode()) == []
    assert CANARY not in caplog.text and caplog.records
    uploads = fake_collector.uploads()
    assert len(uploads) >= 4 + 2  # the failed attempts and retries, then two batches
    for seen in fake_collector.seen:
        assert CANARY.encode() not in seen.raw_body and CANARY.encode() not in seen.body
        assert CANARY not in repr(seen.headers) and CANARY not in seen.path
    assert len(fake_collector.backend.reports("t-cms")) == 1
