"""Fixtures of the SDK tests: small tasks and a scriptable fake collector (tests.support)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ldp_telemetry.shared import TaskConfig
from tests.support.fake_collector import FakeCollector, make_tasks, start_collector


@pytest.fixture
def tasks() -> dict[str, TaskConfig]:
    """Return one small task per mechanism."""
    return make_tasks()


@pytest.fixture
def fake_collector(tasks: dict[str, TaskConfig]) -> Iterator[FakeCollector]:
    """Yield a running fake collector serving ``tasks``; stopped after the test."""
    fake, server = start_collector(tasks)
    yield fake
    fake.release.set()
    server.shutdown()
    server.server_close()
