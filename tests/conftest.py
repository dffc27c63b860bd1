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

# Modules whose module-scoped fixtures cost seconds of CPU or build into shared folders: a
# simulation's rows, both wheels and a clean venv (test_wheels: python -m build writes the
# egg-info into the checkout), 30,000 honest reports, the uploads cached across backends, two
# servers. Under make test's two workers (pytest-xdist, --dist loadgroup) each runs whole on
# one worker, so its fixtures are made once, not once per worker.
ONE_WORKER_MODULES = (
    "tests/test_wheels.py",
    "tests/aggregator/api/test_poisoning.py",
    "tests/aggregator/breakdowns/test_compare.py",
    "tests/aggregator/store/test_group_commit_http.py",
    "tests/simulations/breakdowns/test_sim_dimensions.py",
    "tests/simulations/frequency/test_sim_choose_mechanism.py",
    "tests/simulations/frequency/test_sim_rr_seed.py",
    "tests/simulations/frequency/test_sim_rr_vs_laplace.py",
    "tests/simulations/frequency/test_sim_sketch_accuracy.py",
    "tests/simulations/poisoning/test_sim_poisoning.py",
    "tests/simulations/privacy/test_sim_posterior.py",
    "tests/simulations/privacy/test_sim_shuffle.py",
)


def is_browser_test(item: pytest.Item) -> bool:
    """Whether a test starts Playwright (a browser fixture of pytest-playwright)."""
    return bool(BROWSER_FIXTURES & set(getattr(item, "fixturenames", ())))


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the browser tests last, in their order; group ONE_WORKER_MODULES for the workers.

    Playwright's sync API keeps an asyncio loop running in the main thread from the first
    browser test to the session's end, and ``asyncio.run`` refuses to start inside it (the
    RSGI bridge and group-commit tests call it). tests/aggregator/dashboard sorts before
    tests/aggregator/serving and store, so without this the order of folders would decide.

    Under pytest-xdist each worker is a process with its own loop, and --dist loadgroup hands
    out the groups first (largest first), then one test at a time in this order: each worker
    runs its browser tests after all its others. A browser test in a group would run with its
    group, before other tests of its worker, so none may be in one (the run stops, saying so).
    """
    items.sort(key=is_browser_test)
    root = config.rootpath
    for module in ONE_WORKER_MODULES:  # a renamed module must not leave its group silently
        if not (root / module).is_file():
            raise pytest.UsageError(f"tests/conftest.py: ONE_WORKER_MODULES names {module}")
    for item in items:
        if item.path.relative_to(root).as_posix() in ONE_WORKER_MODULES:
            item.add_marker(pytest.mark.xdist_group(item.path.stem))
    grouped = [item.nodeid for item in items if is_browser_test(item)
               and item.get_closest_marker("xdist_group")]  # fmt: skip
    if grouped:
        raise pytest.UsageError(f"browser tests must not be in an xdist_group: {grouped}")


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """Launch Debian's Chromium for pytest-playwright's ``page``; never a downloaded browser."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(
            f"the browser tests need Debian's Chromium at {CHROMIUM}: run 'make test' as "
            "root (it installs it with apt-get) or 'apt-get install chromium'"
        )
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": LAUNCH_ARGS}
