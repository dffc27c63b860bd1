"""The tests' PostgreSQL: a real, throwaway server (pgserver's PostgreSQL 16) and empty databases.

pgserver (a developer dependency in pyproject.toml) ships the server binaries in a pip package
and, as root, runs them as an unprivileged user it creates, so neither ``make test`` nor
``make demo-cluster`` needs a system PostgreSQL. The server listens on a Unix socket in
its own folder only (no TCP port). ``new_database()`` makes an empty database; ``stop()``
stops the server and deletes its folder. A production cluster uses its own PostgreSQL.

The suite's fixtures (``postgres``, ``empty_databases``: tests/support/fixtures.py) start one
per session. It is never skipped: a server that cannot start fails the tests that need it,
saying why. ``make demo-cluster`` and the benchmarks use the same class through
:mod:`demo.postgres`.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from pathlib import Path

import psycopg


class PostgresServer:
    """A running PostgreSQL server in ``folder``; ``new_database()`` makes an empty one."""

    def __init__(self) -> None:
        # Not under pytest's temp folders: they are 0700, and the server runs as another user.
        self.folder = Path(tempfile.mkdtemp(prefix="ldp-postgres-"))
        self.folder.chmod(0o755)
        if "XDG_RUNTIME_DIR" not in os.environ:  # else platformdirs warns on every use
            # pgserver keeps its lock file there for the whole process: one folder per
            # user, outside the server's folder (which stop() deletes).
            runtime = Path(tempfile.gettempdir()) / f"ldp-pgserver-run-{os.getuid()}"
            runtime.mkdir(mode=0o700, exist_ok=True)
            os.environ["XDG_RUNTIME_DIR"] = str(runtime)
        try:
            import pgserver
        except ImportError as error:  # never skip: the PostgreSQL store must be tested
            raise RuntimeError(
                "a throwaway PostgreSQL server needs pgserver: pip install -e '.[dev]' "
                "(make test and make demo-cluster install it)"
            ) from error
        self._get_server = pgserver.get_server
        self._server = self._get_server(self.folder / "data", cleanup_mode="stop")
        self.admin_url = self._server.get_uri()
        self._names = itertools.count()

    def new_database(self) -> str:
        """Create an empty database and return its URL."""
        name = f"ldp_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.admin_url.replace("/postgres?", f"/{name}?", 1)

    def pause(self) -> None:
        """Stop the server (pg_ctl stop: clients are disconnected); ``resume`` starts it."""
        self._server.cleanup()

    def resume(self) -> None:
        """Start the paused server again on the same data and socket."""
        self._server = self._get_server(self.folder / "data", cleanup_mode="stop")

    def stop(self) -> None:
        """Stop the server and delete its data."""
        self._server.cleanup()
        shutil.rmtree(self.folder, ignore_errors=True)


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
