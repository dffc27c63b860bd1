"""Fixtures of the TypeScript SDK's tests: the SDK built once, a real collector per module.

The browser (Debian's Chromium for pytest-playwright) is the suite's: tests/conftest.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.sdk_js.helpers import build
from tests.support.servers import start_server
from tests.support.workers import build_once


@pytest.fixture(scope="session")
def sdk() -> None:
    """Compile and bundle sdk-js once per run (once for all workers: it is built in place)."""
    build_once("sdk-js", build)


@pytest.fixture(scope="module")
def collector_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Yield the URL of a real collector (ldp-aggregator serve) on a free loopback port."""
    server = start_server(tmp_path_factory.mktemp("sdkjs") / "collector.sqlite3")
    try:
        yield server.url
    finally:
        server.kill()
