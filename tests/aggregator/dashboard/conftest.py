"""Fixtures of the dashboard tests: a collector seeded over HTTP with the demo's data.

The browser (Debian's Chromium for pytest-playwright) is the suite's: tests/conftest.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from demo.dashboard import Seeded, seed
from tests.support.servers import ADMIN, start_server

SEED_SCALE = 0.3  # of demo/dashboard.py's counts: enough for every chart, quick to upload


@pytest.fixture(scope="module")
def seeded_collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Seeded]]:
    """Yield a real collector's URL and what was seeded into it over HTTP (one per module)."""
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
