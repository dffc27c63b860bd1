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
from tests.support.workers import ONE_WORKER_MODULES, make_scheduler

pytest_plugins = ["tests.support.fixtures"]

# pytest-playwright's fixtures that start its sync API (the session's ``playwright``).
BROWSER_FIXTURES = {"page", "context", "browser", "browser_type", "playwright"}


def is_browser_test(item: pytest.Item) -> bool:
    """Whether a test starts Playwright (a browser fixture of pytest-playwright)."""
    return bool(BROWSER_FIXTURES & set(getattr(item, "fixturenames", ())))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the browser tests last, in their order.

    Playwright's sync API keeps an asyncio loop running in the main thread from the first
    browser test to the session's end, and ``asyncio.run`` refuses to start inside it (the
    RSGI bridge and group-commit tests call it). tests/aggregator/dashboard sorts before
    tests/aggregator/serving and store, so without this the order of folders would decide.

    Under make test's workers (pytest-xdist) each worker is a process with its own loop, and
    the suite's scheduler (tests/support/workers.py) hands out the modules of
    ONE_WORKER_MODULES first, then one test at a time in this order: each worker runs its
    browser tests after all its others. A browser test in one of those modules would run
    with its module, before the worker's other tests, so none may be (the run stops, saying so).
    """
    items.sort(key=is_browser_test)
    root = config.rootpath
    for module in ONE_WORKER_MODULES:  # a renamed module must not lose its grouping silently
        if not (root / module).is_file():
            raise pytest.UsageError(f"tests/support/workers.py names no module {module}")
    grouped = [item.nodeid for item in items if is_browser_test(item)
               and item.nodeid.split("::")[0] in ONE_WORKER_MODULES]  # fmt: skip
    if grouped:
        raise pytest.UsageError(f"browser tests in ONE_WORKER_MODULES: {grouped}")


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # before pytest-xdist's own choice
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Schedule make test's workers as tests/support/workers.py says (``-n 2``)."""
    return make_scheduler(config, log)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """Launch Debian's Chromium for pytest-playwright's ``page``; never a downloaded browser."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(
            f"the browser tests need Debian's Chromium at {CHROMIUM}: run 'make test' as "
            "root (it installs it with apt-get) or 'apt-get install chromium'"
        )
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": LAUNCH_ARGS}
