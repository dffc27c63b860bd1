"""What every ``ldp-aggregator`` command shares: which database, and an app bound to it.

The database comes from ``--db`` given after the command (``ldp-aggregator serve --db X``)
or before it (``ldp-aggregator --db X serve``), else ``LDP_DB``, else the app's
``DATABASE`` setting (``LDP_DATABASE``, the instance folder's config.py), else
``ldp-aggregator.sqlite3`` in the instance folder.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click
from flask import Flask

from shared import TaskConfig

F = TypeVar("F", bound=Callable[..., Any])
DB_HELP = (
    "Database: a SQLite file path or sqlite:///path URL, or a postgresql:// URL shared by "
    "several collector nodes (default: LDP_DB, else ldp-aggregator.sqlite3 in the "
    "instance folder)."
)


def database_option(command: F) -> F:
    """Add ``--db`` to a subcommand; it overrides the group's ``--db`` and ``LDP_DB``."""

    def remember(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
        if value:
            ctx.ensure_object(dict)["db"] = value

    return click.option("--db", default=None, expose_value=False, callback=remember, help=DB_HELP)(
        command
    )


def database(ctx: click.Context | None = None) -> str | None:
    """Return the database the command line names (None: the app's default)."""
    ctx = ctx or click.get_current_context()
    obj = ctx.find_object(dict)
    return None if obj is None else obj.get("db")


def open_app(db: str | None = None) -> Flask:
    """Return the collector app on the command line's database (creating its schema)."""
    from aggregator import create_app  # imported late: serve must configure metrics first
    from aggregator.store import StoreUnavailable

    db = db or database()
    try:
        return create_app({"DATABASE": db} if db else None)
    except StoreUnavailable as error:  # e.g. PostgreSQL not reachable: say so, no traceback
        raise click.ClickException(f"the database cannot be opened: {error}") from None


def load_task(task_id: str) -> TaskConfig:
    """Return a stored task's configuration (inside an app context), or fail naming it."""
    from aggregator.store import get_store

    stored = get_store().get_task(task_id)
    if stored is None:
        raise click.ClickException(f"there is no task {task_id!r}; see 'ldp-aggregator tasks list'")
    return stored.config
