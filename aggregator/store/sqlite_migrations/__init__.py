"""The SQLite store's schema as numbered migrations: ``NNNN_name.sql`` files in this folder.

Each file is applied once, in order, inside the caller's write transaction, and recorded
in ``schema_version`` (version, name, applied_at). ``ldp-aggregator migrate`` (and every
start of the collector) applies the pending ones. A database newer than the code is
refused rather than misread. Databases made before ``schema_version`` existed carry
``PRAGMA user_version = 1``: they are at version 1 already and are recorded as such.
"""

from __future__ import annotations

import sqlite3
import time

from aggregator.store.migrations import SchemaTooNew, refuse_newer, shipped, statements

__all__ = ["SchemaTooNew", "apply_migrations", "current_version", "migrations"]


def migrations() -> list[tuple[int, str, str]]:
    """Return (version, name, SQL) of every SQLite migration shipped, in order."""
    return shipped(__package__)


def current_version(tx: sqlite3.Connection) -> int:
    """Return the database's schema version (0: empty)."""
    has_table = tx.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
    ).fetchone()
    if has_table:
        return int(tx.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()[0])
    return int(tx.execute("PRAGMA user_version").fetchone()[0])  # before schema_version


def apply_migrations(tx: sqlite3.Connection) -> tuple[int, int]:
    """Apply what is pending inside ``tx``; return (version before, version after)."""
    shipped = migrations()
    latest = shipped[-1][0]
    before = current_version(tx)
    refuse_newer(before, latest)
    tx.execute(
        "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, "
        "name TEXT NOT NULL, applied_at INTEGER NOT NULL)"
    )
    recorded = {v for (v,) in tx.execute("SELECT version FROM schema_version")}
    for version, name, sql in shipped:
        if version > before:
            for statement in statements(sql):
                tx.execute(statement)
        if version not in recorded:  # also a version an older database had without the table
            tx.execute(
                "INSERT INTO schema_version VALUES (?, ?, ?)", (version, name, int(time.time()))
            )
    tx.execute(f"PRAGMA user_version = {latest}")  # kept for tools that read only this
    return before, latest
