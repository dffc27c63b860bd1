"""``ldp-aggregator serve``: run the collector under the chosen HTTP server.

The one command that builds the collector's app (ldp_telemetry.aggregator.compose): once here, to
create or migrate the database before the workers start, then in each worker
(ldp_telemetry.aggregator.serving.wsgi).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ldp_telemetry.aggregator import serving
from ldp_telemetry.aggregator.cli.context import database, database_option

if TYPE_CHECKING:
    from ldp_telemetry.aggregator.compose import Collector


@click.command()
@database_option
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(1, 64),
    help="Worker processes; all share the database safely.",
)
@click.option(
    "--server",
    default=serving.DEFAULT_SERVER,
    show_default=True,
    type=click.Choice(serving.SERVERS),
    help="granian (Rust HTTP, threads per worker), gunicorn gthread, or gunicorn "
    "sync (one request per process: any slow client holds it; tests only).",
)
def serve(host: str, port: int, workers: int, server: str) -> None:
    """Serve the collector (SIGTERM lets in-flight uploads commit)."""
    db = database()
    if db:
        # Workers may start elsewhere: a bare path is made absolute, a URL passes as it is.
        os.environ["LDP_DATABASE"] = json.dumps(db if "://" in db else os.path.abspath(db))
    collector = build_collector(db)  # creates the database and its schema before the workers
    app = collector.app
    db = str(collector.settings["DATABASE"])
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from ldp_telemetry.aggregator.core.metrics import claim_run_dir, metrics_root
        from ldp_telemetry.aggregator.store.backends import split_url

        # Off the database's file system (a full disk there must not kill the workers), one
        # folder per run that this run removes on exit and the next run removes after kill -9.
        scheme, location = split_url(db)
        folder = Path(location).parent if scheme == "sqlite" else Path(app.instance_path)
        folder.mkdir(parents=True, exist_ok=True)
        metrics_dir = str(claim_run_dir(metrics_root(folder)))
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
        os.environ["LDP_OWNED_METRICS_DIR"] = metrics_dir
    # One dashboard session key for every worker of this run, so a login holds whichever
    # worker answers: the configured key, else the one this app drew. Quoted: LDP_* values
    # are read as JSON.
    os.environ["LDP_SECRET_KEY"] = json.dumps(str(app.config["SECRET_KEY"]))
    os.environ["LDP_WORKERS"] = str(workers)  # each worker takes 1/N of the upload quota
    argv = serving.command(server, "ldp_telemetry.aggregator.serving.wsgi:app", host, port, workers)
    click.echo(
        f"ldp-aggregator: serving on http://{host}:{port} with {workers} {server} "
        f"worker(s), database {db}\n  admin/analyst tokens: ldp-aggregator "
        "tokens create --role admin (or set LDP_ADMIN_TOKEN / LDP_ANALYST_TOKEN)",
        err=True,
    )
    sys.stderr.flush()
    os.execv(sys.executable, argv)


def build_collector(db: str | None = None) -> Collector:
    """Return the collector on the command line's database, as its workers will build it."""
    # imported late: serve must configure metrics first
    from ldp_telemetry.aggregator.compose import build
    from ldp_telemetry.aggregator.store import StoreUnavailable
    from ldp_telemetry.aggregator.store.migrations import SchemaTooNew

    try:
        return build({"DATABASE": db} if db else None)
    except StoreUnavailable as error:  # e.g. PostgreSQL not reachable: say so, no traceback
        raise click.ClickException(f"the database cannot be opened: {error}") from None
    except SchemaTooNew as error:  # a newer version migrated it: refused, not misread
        raise click.ClickException(str(error)) from None
