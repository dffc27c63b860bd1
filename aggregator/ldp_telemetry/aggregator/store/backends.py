"""Open the store a database URL names: the one place a backend is chosen.

``DATABASE`` is a file path or a ``sqlite:///path`` URL (the embedded SQLite store), or a
``postgresql://`` URL (the shared store several collector nodes can serve from). A new
backend adds one entry to :data:`SCHEMES` and a module implementing
:class:`ldp_telemetry.aggregator.store.interface.Store`; nothing else in the collector changes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from ldp_telemetry.aggregator.store.interface import Store


def _open_sqlite(location: str, config: Mapping[str, Any]) -> Store:
    from ldp_telemetry.aggregator.store.sqlite.backend import SqliteStore

    os.makedirs(os.path.dirname(os.path.abspath(location)), exist_ok=True)
    return SqliteStore(
        location,
        synchronous=str(config["SQLITE_SYNCHRONOUS"]),
        busy_timeout=float(config["SQLITE_BUSY_TIMEOUT"]),
        staged_bytes=int(config["STAGED_BYTES"]),
    )


def _open_postgres(url: str, config: Mapping[str, Any]) -> Store:
    try:
        from ldp_telemetry.aggregator.store.postgres.backend import PostgresStore
    except ImportError as error:  # psycopg is the [postgres] extra
        raise ValueError(
            f"DATABASE is a PostgreSQL URL but psycopg is not installed ({error}): "
            "pip install 'ldp-telemetry-collector[postgres]'"
        ) from None
    return PostgresStore(
        url,
        pool_size=int(config["POSTGRES_POOL_SIZE"]),
        pool_timeout=float(config["POSTGRES_POOL_TIMEOUT"]),
        staged_bytes=int(config["STAGED_BYTES"]),
        synchronous_commit=str(config["POSTGRES_SYNCHRONOUS_COMMIT"]),
    )


# scheme -> opener(location, config); a bare path is the "sqlite" scheme.
SCHEMES: dict[str, Callable[[str, Mapping[str, Any]], Store]] = {
    "sqlite": _open_sqlite,
    "postgresql": _open_postgres,
    "postgres": _open_postgres,
}


def split_url(database: str) -> tuple[str, str]:
    """Return (scheme, location) of a DATABASE value: a path, or scheme://location."""
    if "://" not in database:
        return "sqlite", database
    parts = urlsplit(database)
    if parts.scheme == "sqlite":
        # sqlite:///relative/or/absolute, as SQLAlchemy writes it: the path after "///".
        return "sqlite", database.split("://", 1)[1].removeprefix("/") or ""
    return parts.scheme, database


def open_store(database: str, config: Mapping[str, Any]) -> Store:
    """Open (without initializing) the store at ``database``, or raise ValueError."""
    scheme, location = split_url(database)
    opener = SCHEMES.get(scheme)
    if opener is None:
        raise ValueError(
            f"DATABASE {database!r}: unsupported scheme {scheme!r}; "
            f"supported: a file path, {', '.join(s + '://' for s in SCHEMES)}"
        )
    if not location:
        raise ValueError(f"DATABASE {database!r} names no location")
    return opener(location, config)
