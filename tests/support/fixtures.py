"""The suite's shared fixtures: PostgreSQL, and the collector as real processes.

Registered for every test folder by tests/conftest.py (``pytest_plugins``). Each kind of
collector has its own name, for what it is:

- ``collector_process``: ``ldp-aggregator serve`` in its own process on a fresh SQLite
  file, for one test (tests/support/servers.py starts it);
- ``server_factory``: as many real collectors as a test starts, on any database, all
  killed at its end;
- the in-process Flask app is :func:`tests.support.collectors.make_app` (the collector
  tests' ``app`` fixture, tests/aggregator/conftest.py, runs it on both backends).

Other folders name their own: the client tests' scripted ``fake_collector``, the
dashboard's ``seeded_collector``, the TypeScript SDK's ``collector_url``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.postgres import EmptyDatabases, PostgresServer
from tests.support.servers import Server, start_server


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """Yield the session's PostgreSQL server (started on first use, stopped at the end)."""
    try:
        server = PostgresServer()
    except Exception as error:  # never a skip: the PostgreSQL store must be tested
        raise RuntimeError(f"the tests' PostgreSQL server did not start: {error}") from error
    yield server
    server.stop()


@pytest.fixture(scope="session")
def empty_databases(postgres: PostgresServer) -> EmptyDatabases:
    """Return the session's reusable empty PostgreSQL databases."""
    return EmptyDatabases(postgres)


@pytest.fixture
def collector_process(tmp_path: Path) -> Iterator[Server]:
    """Yield a real collector on ``tmp_path/collector.sqlite3``; killed after the test."""
    server = start_server(tmp_path / "collector.sqlite3")
    yield server
    server.kill()


@pytest.fixture
def server_factory(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    """Yield a function starting servers; every one is killed at the end of the test."""
    started: list[Server] = []

    def start(db: Path | str | None = None, workers: int = 1, **options: Any) -> Server:
        options.setdefault("folder", tmp_path)
        started.append(start_server(db or tmp_path / "server.sqlite3", workers, **options))
        return started[-1]

    yield start
    for server in started:
        server.kill()


@pytest.fixture
def seeded_breakdown_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed the noise of demo.breakdowns' Python SDK devices: device i's grr draws from
    default_rng(10,000 + i) on its thread, so a run's estimates repeat (the SDK itself
    always draws from the OS CSPRNG; its TypeScript and Java devices are not seeded)."""
    import functools
    import threading

    import numpy as np

    from demo.breakdowns import devices
    from ldp_telemetry.shared.mechanisms.grr import GeneralizedRandomizedResponse

    noise = threading.local()
    privatize = GeneralizedRandomizedResponse.privatize

    def seeded(self: Any, value: Any, rng: Any = None) -> Any:
        return privatize(self, value, noise.rng)

    def before(index: int) -> None:
        noise.rng = np.random.default_rng(10_000 + index)

    monkeypatch.setattr(GeneralizedRandomizedResponse, "privatize", seeded)
    monkeypatch.setattr(devices, "run_python", functools.partial(devices.run_python, before=before))
