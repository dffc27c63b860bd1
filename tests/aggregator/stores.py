"""Stores of either backend on fresh databases, for the store tests (the ``stores`` fixture)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ldp_telemetry.aggregator.store.base import SqlStore
from ldp_telemetry.aggregator.store.postgres.backend import PostgresStore
from ldp_telemetry.aggregator.store.sqlite.backend import SqliteStore


class Stores:
    """Opens initialized stores of a backend on fresh databases; closes them all at the end."""

    def __init__(
        self,
        folder: Path,
        new_database: Callable[[str, Path], str],
        give_back: Callable[[str], None],
    ) -> None:
        self.folder, self.new_database, self.give_back = folder, new_database, give_back
        self.opened: list[SqlStore] = []

    def open(self, backend: str, **options: Any) -> SqlStore:
        """Return an initialized store on a fresh, empty database (``options``: the store's)."""
        folder = self.folder / f"store-{len(self.opened)}"
        folder.mkdir()
        return self.at(backend, self.new_database(backend, folder), **options)

    def reopen(self, store: SqlStore, **options: Any) -> SqlStore:
        """Return another store on the same database (nothing cached), initialized."""
        if isinstance(store, SqliteStore):
            return self.at("sqlite", store.path, **options)
        assert isinstance(store, PostgresStore)
        return self.at("postgresql", store.url, **options)

    def at(self, backend: str, location: str, **options: Any) -> SqlStore:
        """Return an initialized store of a backend on an existing database location."""
        kind = SqliteStore if backend == "sqlite" else PostgresStore
        store: SqlStore = kind(location, **options)
        self.opened.append(store)
        store.initialize()
        return store

    def close(self) -> None:
        """Close every store opened and hand its PostgreSQL database back, emptied."""
        urls = set()
        for store in self.opened:
            if isinstance(store, PostgresStore):
                store.close()
                urls.add(store.url)
        for url in sorted(urls):
            self.give_back(url)
