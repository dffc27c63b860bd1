"""Fixtures of the collector's tests: the Flask app on a temp database, and the real server.

The app and the shared server run once per store backend: SQLite (a file) and PostgreSQL
(a fresh database on the session's real PostgreSQL server, tests/support/postgres.py), so
every collector test is a conformance test of both. Tests that are about one backend's
files ask for ``sqlite_app`` or start their own (``server_factory``, tests/support).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.aggregator.stores import Stores
from tests.support.collectors import make_app
from tests.support.postgres import EmptyDatabases, PostgresServer
from tests.support.servers import Server, start_server

BACKENDS = ["sqlite", "postgresql"]


def database(backend: str, folder: Path, request: pytest.FixtureRequest) -> str:
    """Return a fresh, empty DATABASE value of a backend."""
    if backend == "sqlite":
        return str(folder / "test.sqlite3")
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.new_database()


@pytest.fixture(params=BACKENDS)
def app(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Flask]:
    """Return an app on an empty database of each backend.

    PostgreSQL's is one of the session's reusable empty databases (``empty_databases``:
    emptied after the test, once the app's store is closed), not a new one per test.
    """
    databases: EmptyDatabases | None = None
    if request.param == "sqlite":
        url = database(request.param, tmp_path, request)
    else:
        databases = request.getfixturevalue("empty_databases")
        url = databases.take()
    app = make_app(url)
    yield app
    close = getattr(app.extensions["ldp_store"], "close", None)
    if close is not None:
        close()
    if databases is not None:
        databases.give_back(url)


@pytest.fixture
def sqlite_app(tmp_path: Path) -> Flask:
    """Return an app on a fresh SQLite file (tests about the file itself)."""
    return make_app(str(tmp_path / "test.sqlite3"))


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    """Return a test client of the app."""
    return app.test_client()


@pytest.fixture(scope="session", params=BACKENDS)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """Yield one server per backend shared by every test that asks for it (each test uses
    its own task ids, unique across modules): two starts in the session, not two per module."""
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
