"""The ``ldp-aggregator`` command: serve, manage tasks and tokens.

``serve`` runs the app under granian (default) or gunicorn (aggregator.serving); ``tasks``
and ``tokens`` work directly on the database. Without ``--db`` the database is
``ldp-aggregator.sqlite3`` in the app's instance folder (or ``LDP_DATABASE``).

Tokens: ``ldp-aggregator tokens create --role admin`` prints a new token once and stores
only its SHA-256. ``LDP_ADMIN_TOKEN`` / ``LDP_ANALYST_TOKEN`` in the environment are
accepted as well (handy for tests and demos).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import click
from flask import Flask

from aggregator import serving
from aggregator.auth import ROLES
from shared import MECHANISMS


def _app(db: str | None) -> Flask:
    from aggregator import create_app  # imported late: serve must configure metrics first

    return create_app({"DATABASE": db} if db else None)


@click.group()
@click.option("--db", type=click.Path(dir_okay=False), default=None,
              help="SQLite file (default: ldp-aggregator.sqlite3 in the instance folder).")
@click.pass_context
def main(ctx: click.Context, db: str | None) -> None:
    """Collect local-DP telemetry reports and answer estimates."""
    ctx.obj = db


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64),
              help="Worker processes; all share the database safely.")
@click.option("--server", default=serving.DEFAULT_SERVER, show_default=True,
              type=click.Choice(serving.SERVERS),
              help="granian (Rust HTTP, threads per worker), gunicorn gthread, or gunicorn "
                   "sync (one request per process: any slow client holds it; tests only).")
@click.pass_obj
def serve(db: str | None, host: str, port: int, workers: int, server: str) -> None:
    """Serve the collector (SIGTERM lets in-flight uploads commit)."""
    if db:
        os.environ["LDP_DATABASE"] = json.dumps(os.path.abspath(db))
    database = _app(db).config["DATABASE"]  # creates the file and schema before the workers
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from aggregator.metrics import claim_run_dir

        # Next to the database (a folder the collector must be able to write anyway), one
        # folder per run that this run removes on exit and the next run removes after kill -9.
        metrics_dir = str(claim_run_dir(Path(database).parent / "ldp-metrics"))
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
        os.environ["LDP_OWNED_METRICS_DIR"] = metrics_dir
    argv = serving.command(server, "aggregator.wsgi:app", host, port, workers)
    click.echo(f"ldp-aggregator: serving on http://{host}:{port} with {workers} {server} "
               f"worker(s), database {database}\n  admin/analyst tokens: ldp-aggregator "
               "tokens create --role admin (or set LDP_ADMIN_TOKEN / LDP_ANALYST_TOKEN)",
               err=True)
    sys.stderr.flush()
    os.execv(sys.executable, argv)


@main.group()
def tasks() -> None:
    """Create and list tasks."""


@tasks.command("create")
@click.option("--task-id", required=True)
@click.option("--mechanism", required=True, type=click.Choice(MECHANISMS))
@click.option("--epsilon", type=float)
@click.option("--alpha", type=float, help="rr only, with --beta, instead of --epsilon.")
@click.option("--beta", type=float)
@click.option("--k", type=int, help="Sketch rows (cms, hcms).")
@click.option("--m", type=int, help="Sketch width (cms, hcms; a power of two for hcms).")
@click.option("--domain", help="grr: the values, comma-separated.")
@click.option("--time-precision", type=int, help="Bucket width in seconds (default 1 day).")
@click.option("--min-batch-size", type=int)
@click.option("--upload-key-required", is_flag=True, help="Print an upload key once.")
@click.pass_obj
def create_task(db: str | None, **options: Any) -> None:
    """Create a task and print its public configuration as JSON."""
    from aggregator.problems import ApiError
    from aggregator.store import TaskExists, get_store
    from aggregator.tasks import build_task

    params = {key: value for key, value in options.items() if value not in (None, False)}
    if "domain" in params:
        params["domain"] = params["domain"].split(",")
    with _app(db).app_context():
        try:
            stored, upload_key = build_task(params)
            get_store().create_task(stored)
        except ApiError as error:
            raise click.ClickException(error.detail) from None
        except TaskExists:
            raise click.ClickException(f"task {params['task_id']!r} exists already") from None
    body = stored.config.to_dict()
    if upload_key:
        body["upload_key"] = upload_key
    click.echo(json.dumps(body, indent=2))


@tasks.command("list")
@click.pass_obj
def list_tasks(db: str | None) -> None:
    """Print every task's public configuration, one JSON object per line."""
    from aggregator.store import get_store

    with _app(db).app_context():
        for stored in get_store().list_tasks():
            click.echo(json.dumps(stored.config.to_dict()))


@main.group()
def tokens() -> None:
    """Create bearer tokens for admins and analysts."""


@tokens.command("create")
@click.option("--role", required=True, type=click.Choice(ROLES))
@click.pass_obj
def create_token(db: str | None, role: str) -> None:
    """Print a new token once; only its SHA-256 is stored."""
    from aggregator.auth import hash_token, new_token
    from aggregator.store import get_store

    token = new_token()
    with _app(db).app_context():
        get_store().add_token(hash_token(token), role)
    click.echo(token)


if __name__ == "__main__":
    main()
