"""Fixtures of the Java SDK's tests: its classes built once, a real collector per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.sdk_java.helpers import build
from tests.support.servers import start_server
from tests.support.workers import build_once


@pytest.fixture(scope="session")
def java_sdk() -> None:
    """Compile sdk-java (and the driver) once per run, offline (once for all workers: it is
    built in place, in sdk-java/target)."""
    build_once("sdk-java", build)


@pytest.fixture(scope="module")
def collector_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Yield the URL of a real collector (ldp-aggregator serve) on a free loopback port."""
    server = start_server(tmp_path_factory.mktemp("sdkjava") / "collector.sqlite3")
    try:
        yield server.url
    finally:
        server.kill()
