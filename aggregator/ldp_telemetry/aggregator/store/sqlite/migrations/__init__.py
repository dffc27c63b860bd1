"""The SQLite store's schema as numbered migrations: ``NNNN_name.sql`` files in this folder.

Applied by the runner both backends share
(:func:`ldp_telemetry.aggregator.store.migrations.apply_migrations`): each file once, in order,
inside the caller's write transaction (SQLite's one write lock keeps other processes out), recorded
in ``schema_version``. ``ldp-aggregator migrate`` (and every start of the collector) applies the
pending ones; a database newer than the code is refused rather than misread. Databases made before
``schema_version`` existed carry ``PRAGMA user_version = 1``: they are at version 1 already and are
recorded as such; the latest version is still written there for tools that read only it.
"""

from __future__ import annotations

from ldp_telemetry.aggregator.store.migrations import Schema, SchemaTooNew
from ldp_telemetry.aggregator.store.sql import Tx

__all__ = ["SCHEMA", "SchemaTooNew", "migrations"]


class SqliteSchema(Schema):
    """SQLite's differences: the version in ``PRAGMA user_version`` too."""

    def legacy_version(self, tx: Tx) -> int:
        """Return ``PRAGMA user_version``: 1 for a database of the first release."""
        ((version,),) = tx.execute("PRAGMA user_version")
        return int(version)

    def mark(self, tx: Tx, version: int) -> None:
        """Write the version to ``PRAGMA user_version`` (kept for tools that read only it)."""
        tx.execute(f"PRAGMA user_version = {int(version)}")


SCHEMA = SqliteSchema(__package__, big_integer="INTEGER")


def migrations() -> list[tuple[int, str, str]]:
    """Return (version, name, SQL) of every SQLite migration shipped, in order."""
    return SCHEMA.migrations()
