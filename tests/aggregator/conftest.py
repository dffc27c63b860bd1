"""Fixtures: the Flask app on a temp database, and the real server as a subprocess.

The app and the shared server run once per store backend: SQLite (a file) and PostgreSQL
(a fresh database on the session's real PostgreSQL server), so every collector test is
a conformance test of both. Tests that are about one backend's files ask for
``sqlite_app`` or start their own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from agg_stores import Stores
from flask import Flask
from flask.testing import FlaskClient

from demo.postgres import PostgresServer
from ldp_telemetry.aggregator import create_app
from tests.support.servers import ADMIN, ANALYST, Server, start_server

BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """Yield the session's PostgreSQL server (started on first use, stopped at the end)."""
    server = PostgresServer()
    yield server
    server.stop()


def database(backend: str, folder: Path, request: pytest.FixtureRequest) -> str:
    """Return a fresh, empty DATABASE value of a backend."""
    if backend == "sqlite":
        return str(folder / "test.sqlite3")
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.new_database()


class EmptyDatabases:
    """Empty PostgreSQL databases for store tests, emptied and handed out again after use.

    Creating a database copies ~8 MB of files (0.3-1 s on a loaded machine) and leaves
    them for the session's end to delete; dropping the schema of a used one is instant.
    """

    def __init__(self, server: PostgresServer) -> None:
        self.server = server
        self.free: list[str] = []

    def take(self) -> str:
        """Return the URL of an empty database (no table, no schema version)."""
        return self.free.pop() if self.free else self.server.new_database()

    def give_back(self, url: str) -> None:
        """Empty a database whose connections are closed, for the next ``take``."""
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("DROP SCHEMA public CASCADE")
            conn.execute("CREATE SCHEMA public")
        self.free.append(url)


@pytest.fixture(scope="session")
def empty_databases(postgres: PostgresServer) -> EmptyDatabases:
    """Return the session's reusable empty PostgreSQL databases."""
    return EmptyDatabases(postgres)


def make_app(database: str) -> Flask:
    """Return an app on ``database`` with known admin and analyst tokens."""
    return create_app(
        {"TESTING": True, "DATABASE": database, "ADMIN_TOKEN": ADMIN, "ANALYST_TOKEN": ANALYST}
    )


@pytest.fixture(params=BACKENDS)
def app(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Flask]:
    """Return an app on a fresh database of each backend."""
    app = make_app(database(request.param, tmp_path, request))
    yield app
    close = getattr(app.extensions["ldp_store"], "close", None)
    if close is not None:
        close()


@pytest.fixture
def sqlite_app(tmp_path: Path) -> Flask:
    """Return an app on a fresh SQLite file (tests about the file itself)."""
    return make_app(str(tmp_path / "test.sqlite3"))


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    """Return a test client of the app."""
    return app.test_client()


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


@pytest.fixture(scope="module", params=BACKENDS)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """Yield one server per backend shared by a module's tests (each uses its own tasks)."""
    folder = tmp_path_factory.mktemp("server")
    running = start_server(database(request.param, folder, request), folder=folder)
    yield running
    running.kill()


@pytest.fixture
def stores(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Stores]:
    """Yield an opener of stores on fresh databases of either backend."""

    def empty(backend: str, folder: Path) -> str:
        if backend == "sqlite":
            return database(backend, folder, request)
        return empty_databases().take()

    def empty_databases() -> EmptyDatabases:
        databases: EmptyDatabases = request.getfixturevalue("empty_databases")
        return databases

    opener = Stores(tmp_path, empty, lambda url: empty_databases().give_back(url))
    yield opener
    opener.close()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Return each store backend's name in turn."""
    return str(request.param)
