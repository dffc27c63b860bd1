"""What every ``ldp-aggregator`` command shares: which database, and the store on it.

The database comes from ``--db`` given after the command (``ldp-aggregator serve --db X``)
or before it (``ldp-aggregator --db X serve``), else ``LDP_DB``, else the app's
``DATABASE`` setting (``LDP_DATABASE``, the instance folder's config.py), else
``ldp-aggregator.sqlite3`` in the instance folder. Commands open the store directly with
the collector's settings (:func:`open_collector`, ldp_telemetry.aggregator.core.config) and
never import Flask; only ``serve`` builds the app (ldp_telemetry.aggregator.cli.server_commands).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ldp_telemetry.shared import TaskConfig

if TYPE_CHECKING:
    from ldp_telemetry.aggregator.store import Store

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


@dataclass(frozen=True)
class Collector:
    """The command line's store and the collector's settings it was opened with."""

    store: Store
    config: Mapping[str, Any]


def collector_settings(db: str | None = None) -> Mapping[str, Any]:
    """Return the collector's settings as the app reads them, on the command line's database."""
    from ldp_telemetry.aggregator.core import config

    db = db or database()
    return config.load(config.instance_folder(), {"DATABASE": db} if db else None)


def open_collector(db: str | None = None) -> Collector:
    """Return the store on the command line's database (creating or migrating its schema)."""
    from ldp_telemetry.aggregator.store import StoreUnavailable, open_store
    from ldp_telemetry.aggregator.store.migrations import SchemaTooNew

    config = collector_settings(db)
    try:
        store = open_store(str(config["DATABASE"]), config)
        store.initialize()
    except StoreUnavailable as error:  # e.g. PostgreSQL not reachable: say so, no traceback
        raise click.ClickException(f"the database cannot be opened: {error}") from None
    except SchemaTooNew as error:  # a newer version migrated it: refused, as migrate does
        raise click.ClickException(str(error)) from None
    return Collector(store, config)


def load_task(store: Store, task_id: str) -> TaskConfig:
    """Return a stored task's configuration, or fail naming it."""
    stored = store.get_task(task_id)
    if stored is None:
        raise click.ClickException(f"there is no task {task_id!r}; see 'ldp-aggregator tasks list'")
    return stored.config
