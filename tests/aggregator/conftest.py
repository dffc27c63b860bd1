"""Fixtures: the Flask app on a temp database, and the real server as a subprocess."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from agg_server import ADMIN, ANALYST, Server, start_server
from flask import Flask
from flask.testing import FlaskClient

from aggregator import create_app


@pytest.fixture
def app(tmp_path: Path) -> Flask:
    """Return an app on a fresh database with known admin and analyst tokens."""
    return create_app(
        {
            "TESTING": True,
            "DATABASE": str(tmp_path / "test.sqlite3"),
            "ADMIN_TOKEN": ADMIN,
            "ANALYST_TOKEN": ANALYST,
        }
    )


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    """Return a test client of the app."""
    return app.test_client()


@pytest.fixture
def server_factory(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    """Yield a function starting servers; every one is killed at the end of the test."""
    started: list[Server] = []

    def start(db: Path | None = None, workers: int = 1, **options: Any) -> Server:
        started.append(start_server(db or tmp_path / "server.sqlite3", workers, **options))
        return started[-1]

    yield start
    for server in started:
        server.kill()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Yield one server shared by a module's tests (each test uses its own tasks)."""
    running = start_server(tmp_path_factory.mktemp("server") / "shared.sqlite3")
    yield running
    running.kill()
