"""The PostgreSQL store's schema as numbered migrations: ``NNNN_name.sql`` in this folder.

Applied by the runner both backends share (:mod:`ldp_telemetry.aggregator.store.migrations`), under
a transaction-scoped advisory lock so that nodes starting together migrate once.
"""

from __future__ import annotations

from ldp_telemetry.aggregator.store.migrations import Schema, SchemaTooNew
from ldp_telemetry.aggregator.store.sql import Tx

__all__ = ["MIGRATIONS_LOCK", "SCHEMA", "SchemaTooNew", "migrations"]

MIGRATIONS_LOCK = (0x1D9, 0)  # advisory lock key (two int4): schema migrations


class PostgresSchema(Schema):
    """PostgreSQL's differences: nodes migrating at once wait for each other."""

    def lock(self, tx: Tx) -> None:
        """Take the migrations' advisory lock until the transaction ends."""
        tx.execute("SELECT pg_advisory_xact_lock(?, ?)", MIGRATIONS_LOCK)


SCHEMA = PostgresSchema(__package__, big_integer="BIGINT")


def migrations() -> list[tuple[int, str, str]]:
    """Return (version, name, SQL) of every PostgreSQL migration shipped, in order."""
    return SCHEMA.migrations()
