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


# What undoes migration 0008 (slices) on a database whose rows are all slice 0: tests that
# rewind a database to an older schema version run these first, so that 0008 runs again.
# Staged and archived come before sums (a fold locks staged, then sums, then rollup).
_SQLITE_SUMS_V7 = (
    "CREATE TABLE sums_v7 (task_id TEXT NOT NULL, bucket INTEGER NOT NULL, "
    "row INTEGER NOT NULL, n INTEGER NOT NULL, counters BLOB NOT NULL, "
    "PRIMARY KEY (task_id, bucket, row)) WITHOUT ROWID",
    "INSERT INTO sums_v7 SELECT task_id, bucket, row, n, counters FROM sums",
    "DROP TABLE sums",
    "ALTER TABLE sums_v7 RENAME TO sums",
    "CREATE TABLE rollup_v7 (task_id TEXT NOT NULL, row INTEGER NOT NULL, "
    "n INTEGER NOT NULL, counters BLOB NOT NULL, PRIMARY KEY (task_id, row)) WITHOUT ROWID",
    "INSERT INTO rollup_v7 SELECT task_id, row, n, counters FROM rollup",
    "DROP TABLE rollup",
    "ALTER TABLE rollup_v7 RENAME TO rollup",
)
WITHOUT_SLICES = {
    "sqlite": (
        "ALTER TABLE shuffled_batches DROP COLUMN slice_counts",
        "ALTER TABLE staged DROP COLUMN slice",
        "ALTER TABLE archived DROP COLUMN slice",
        *_SQLITE_SUMS_V7,
    ),
    "postgresql": (  # a primary key goes with a column of it
        "ALTER TABLE shuffled_batches DROP COLUMN slice_counts",
        "ALTER TABLE staged DROP COLUMN slice",
        "ALTER TABLE archived DROP COLUMN slice",
        "ALTER TABLE sums DROP COLUMN slice",
        "ALTER TABLE sums ADD PRIMARY KEY (task_id, bucket, row)",
        "ALTER TABLE rollup DROP COLUMN slice",
        "ALTER TABLE rollup ADD PRIMARY KEY (task_id, row)",
    ),
}
