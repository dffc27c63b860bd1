"""Numbered schema migrations: ``NNNN_name.sql`` files in a backend's migrations package.

Each backend keeps its SQL in its own package (``sqlite_migrations``,
``postgres_migrations``) because the dialects differ; what a migration is, how the files
are found and ordered, and the refusal of a database newer than the code live here. Each
file is applied once, in order, inside one write transaction, and recorded in
``schema_version`` (version, name, applied_at).
"""

from __future__ import annotations

import re
from importlib import resources

MIGRATION = re.compile(r"^(\d{4})_(\w+)\.sql$")


class SchemaTooNew(RuntimeError):
    """The database was migrated by a newer ldp-aggregator than this one."""


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
