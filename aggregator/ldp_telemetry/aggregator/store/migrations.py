"""Numbered schema migrations and the one runner both backends use.

Each backend keeps its SQL in its own package (``sqlite_migrations``,
``postgres_migrations``: ``NNNN_name.sql`` files) because the dialects differ, with a
:class:`Schema` saying what else differs (a lock, a legacy version marker). What a
migration is, how the files are found and ordered, the refusal of a database newer than
the code, and the runner live here. Each file is applied once, in order, inside one write
transaction, and recorded in ``schema_version`` (version, name, applied_at).
"""

from __future__ import annotations

import re
import time
from importlib import resources

from ldp_telemetry.aggregator.store.sql import Tx

MIGRATION = re.compile(r"^(\d{4})_(\w+)\.sql$")


class SchemaTooNew(RuntimeError):
    """The database was migrated by a newer ldp-aggregator than this one."""


class Schema:
    """A backend's migrations: its package of SQL files and its dialect's few differences."""

    def __init__(self, package: str, *, big_integer: str) -> None:
        self.package = package
        self.big_integer = big_integer  # the column type of a Unix time

    def migrations(self) -> list[tuple[int, str, str]]:
        """Return (version, name, SQL) of every migration shipped, in order."""
        return shipped(self.package)

    def lock(self, tx: Tx) -> None:
        """Keep other processes from migrating until ``tx`` ends (default: nothing)."""

    def legacy_version(self, tx: Tx) -> int:
        """Return the version of a database made before ``schema_version`` (default: 0)."""
        return 0

    def mark(self, tx: Tx, version: int) -> None:
        """Record the version where older tools look for it (default: nothing)."""


def apply_migrations(tx: Tx, schema: Schema) -> tuple[int, int]:
    """Apply what is pending inside ``tx``; return (version before, version after)."""
    migrations = schema.migrations()
    latest = migrations[-1][0]
    schema.lock(tx)
    tx.execute(
        "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, "
        f"name TEXT NOT NULL, applied_at {schema.big_integer} NOT NULL)"
    )
    recorded = {int(v) for (v,) in tx.execute("SELECT version FROM schema_version")}
    before = max(recorded) if recorded else schema.legacy_version(tx)
    refuse_newer(before, latest)
    for version, name, sql in migrations:
        if version > before:
            for statement in statements(sql):
                tx.execute(statement)
        if version not in recorded:  # also a version an older database had without the table
            tx.execute(
                "INSERT INTO schema_version VALUES (?, ?, ?)", (version, name, int(time.time()))
            )
    schema.mark(tx, latest)
    return before, latest


def shipped(package: str) -> list[tuple[int, str, str]]:
    """Return (version, name, SQL) of every migration in ``package``, in order."""
    found = []
    for entry in resources.files(package).iterdir():
        match = MIGRATION.match(entry.name)
        if match:
            found.append((int(match.group(1)), match.group(2), entry.read_text("utf-8")))
    found.sort()
    if [v for v, _, _ in found] != list(range(1, len(found) + 1)):
        raise RuntimeError(f"migrations must be numbered 1..n without gaps: {found}")
    return found


def refuse_newer(before: int, latest: int) -> None:
    """Raise SchemaTooNew if the database is ahead of the migrations this code ships."""
    if before > latest:
        raise SchemaTooNew(
            f"the database has schema version {before}; this ldp-aggregator "
            f"knows up to {latest}: upgrade ldp-aggregator"
        )


def statements(sql: str) -> list[str]:
    """Return the statements of a migration file (no statement holds a ';' inside)."""
    return [statement for statement in sql.split(";") if statement.strip()]
