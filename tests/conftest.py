"""Fixtures of the whole suite: tests/support's (PostgreSQL, the collector) and the browser.

Test folders mirror the code's layout (tests/client, tests/shared, tests/aggregator/<package>,
tests/shuffler, ...) and every folder is a package, so two folders may hold modules of the
same name (tests/shared/mechanisms/hh/test_mechanism.py and .../numeric/test_mechanism.py)
and helpers are imported by their full name (``from tests.support.reports import ...``).
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.support.browser import CHROMIUM, LAUNCH_ARGS

pytest_plugins = ["tests.support.fixtures"]

# pytest-playwright's fixtures that start its sync API (the session's ``playwright``).
BROWSER_FIXTURES = {"page", "context", "browser", "browser_type", "playwright"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the browser tests last, in their order.

    Playwright's sync API keeps an asyncio loop running in the main thread from the first
    browser test to the session's end, and ``asyncio.run`` refuses to start inside it (the
    RSGI bridge and group-commit tests call it). tests/aggregator/dashboard sorts before
    tests/aggregator/serving and store, so without this the order of folders would decide.
    """
    items.sort(key=lambda item: bool(BROWSER_FIXTURES & set(getattr(item, "fixturenames", ()))))


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """Launch Debian's Chromium for pytest-playwright's ``page``; never a downloaded browser."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(
            f"the browser tests need Debian's Chromium at {CHROMIUM}: run 'make test' as "
            "root (it installs it with apt-get) or 'apt-get install chromium'"
        )
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": LAUNCH_ARGS}
