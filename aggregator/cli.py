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
from shared.mechanisms.registry import MECHANISMS, all_options, plan


def _app(db: str | None) -> Flask:
    from aggregator import create_app  # imported late: serve must configure metrics first

    return create_app({"DATABASE": db} if db else None)


@click.group()
@click.option("--db", default=None,
              help="Database: a SQLite file path or sqlite:///path URL (default: "
                   "ldp-aggregator.sqlite3 in the instance folder).")
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
        # Workers may start elsewhere: a bare path is made absolute, a URL passes as it is.
        os.environ["LDP_DATABASE"] = json.dumps(db if "://" in db else os.path.abspath(db))
    app = _app(db)  # creates the database and its schema before the workers start
    database = app.config["DATABASE"]
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from aggregator.metrics import claim_run_dir
        from aggregator.store.backends import split_url

        # Next to a database file (a folder the collector must be able to write anyway),
        # else in the instance folder: one folder per run that this run removes on exit and
        # the next run removes after kill -9.
        scheme, location = split_url(str(database))
        root = Path(location).parent if scheme == "sqlite" else Path(app.instance_path)
        metrics_dir = str(claim_run_dir(root / "ldp-metrics"))
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


def mechanism_options(command: Any) -> Any:
    """Add one option per task parameter that any registered mechanism takes."""
    types = {"number": float, "integer": int, "string": str, "strings": str}
    for option in reversed(list(all_options().values())):
        help_text = option.help + (" Comma-separated." if option.kind == "strings" else "")
        command = click.option(f"--{option.name.replace('_', '-')}", option.name,
                               type=types[option.kind], help=help_text)(command)
    return command


@tasks.command("create")
@click.option("--task-id", required=True)
@click.option("--mechanism", required=True, type=click.Choice(MECHANISMS))
@mechanism_options
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
    for name, option in all_options().items():
        if option.kind == "strings" and name in params:
            params[name] = params[name].split(",")
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


@tasks.command("plan")
@click.option("--domain-size", required=True, type=click.IntRange(2, None),
              help="How many distinct values the task may see.")
@click.option("--devices", required=True, type=click.IntRange(1, None),
              help="Reports expected per estimate (devices x reports per period).")
@click.option("--epsilon", required=True, type=click.FloatRange(0, 20, min_open=True))
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
              show_default=True)
def plan_task(domain_size: int, devices: int, epsilon: float, fmt: str) -> None:
    """Print each mechanism's expected standard error for a workload and recommend one.

    From the closed-form variances, with the devices spread evenly over the domain (hash
    collisions included); the most accurate mechanism comes first.
    """
    plans = plan(epsilon, domain_size, devices)
    if fmt == "json":
        click.echo(json.dumps([{"mechanism": name, "std_error": p.std_error,
                                "report_bits": p.report_bits, "parameters": p.fields}
                               for name, p in plans], indent=2))
        return
    click.echo(f"{'mechanism':<10} {'std error of a count':>21} {'report bits':>12}  parameters")
    for name, p in plans:
        fields = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in p.fields.items())
        click.echo(f"{name:<10} {p.std_error:>21,.1f} {p.report_bits:>12,}  {fields}")
    best = plans[0][1]
    click.echo(f"\nrecommended: {plans[0][0]} (a count's 95% interval is about "
               f"±{1.96 * best.std_error:,.0f} of {devices:,} reports, "
               f"{1.96 * best.std_error / devices:.2%})")


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


@main.command("heavy-hitters")
@click.argument("task_id")
@click.option("--top", default=20, show_default=True, type=click.IntRange(1, 1000))
@click.option("--format", "fmt", default="table", show_default=True,
              type=click.Choice(["table", "json"]))
@click.pass_obj
def heavy_hitters(db: str | None, task_id: str, top: int, fmt: str) -> None:
    """Print a task's most frequent strings, found without candidates (e.g. an hh task)."""
    from aggregator.store import get_store

    with _app(db).app_context():
        stored = get_store().get_task(task_id)
        if stored is None:
            raise click.ClickException(f"there is no task {task_id!r}")
        discover = getattr(stored.config.mechanism_object, "discover", None)
        if discover is None:
            raise click.ClickException(f"task {task_id!r} ({stored.config.mechanism}) cannot "
                                       "list its frequent values without candidates")
        with get_store().read_sums(stored.config, None, None) as sums:
            if sums.total < stored.config.min_batch_size:
                raise click.ClickException(f"only {sums.total} reports; heavy hitters need "
                                           f"at least {stored.config.min_batch_size}")
            found = discover(sums, top=top)
    if fmt == "json":
        click.echo(json.dumps({"n": found.estimates.n, "examined": list(found.examined),
                               "heavy_hitters": found.rows()}, indent=2))
        return
    click.echo(f"n = {found.estimates.n}, candidates examined per level: "
               f"{', '.join(map(str, found.examined))}")
    click.echo(f"{'value':24} {'estimate':>12} {'std_error':>10}  reliable")
    for row in found.rows():
        click.echo(f"{row['value'][:24]:24} {row['estimate']:12.0f} {row['std_error']:10.0f}"
                   f"  {'yes' if row['reliable'] else 'no'}")


if __name__ == "__main__":
    main()
