"""Fixtures of the TypeScript SDK's tests: the SDK built once, a real collector per module."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from sdkjs_helpers import build, start_server

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="session")
def sdk() -> None:
    """Compile and bundle sdk-js once per session."""
    build()


@pytest.fixture(scope="module")
def collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Yield the URL of a real collector (ldp-aggregator serve) on a free loopback port."""
    server = start_server(tmp_path_factory.mktemp("sdkjs") / "collector.sqlite3")
    try:
        yield server.url
    finally:
        server.kill()


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """Launch Debian's Chromium (as root it needs --no-sandbox); never a downloaded browser."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(
            f"the SDK's browser test needs Debian's Chromium at {CHROMIUM}: run 'make test' as "
            "root (it installs it with apt-get) or 'apt-get install chromium'"
        )
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": ["--no-sandbox"]}
