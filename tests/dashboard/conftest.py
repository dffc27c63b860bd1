"""Fixtures of the browser tests: Debian's Chromium for pytest-playwright, a seeded collector.

Playwright's own browser downloads are never used: the tests launch /usr/bin/chromium,
which ``make test`` installs with apt-get when it runs as root. Without it the browser tests
fail and say so (they are part of what CI must run, so they never skip).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from dash_helpers import ADMIN, start_server

from demo.dashboard import CHROMIUM, Seeded, seed

SEED_SCALE = 0.3  # of demo/dashboard.py's counts: enough for every chart, quick to upload


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """Launch Debian's Chromium (as root it needs --no-sandbox)."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(
            f"the dashboard's browser tests need Debian's Chromium at {CHROMIUM}: run "
            "'make test' as root (it installs it with apt-get) or 'apt-get install chromium'"
        )
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": ["--no-sandbox"]}


@pytest.fixture(scope="module")
def collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Seeded]]:
    """Yield a running collector's URL and what was seeded into it over HTTP."""
    folder = tmp_path_factory.mktemp("dashboard")
    server = start_server(folder / "dashboard.sqlite3")
    try:
        yield server.url, seed(server.url, ADMIN, np.random.default_rng(2026), SEED_SCALE)
    finally:
        server.kill()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Return the folder the screenshots go to."""
    return tmp_path_factory.mktemp("screenshots")
