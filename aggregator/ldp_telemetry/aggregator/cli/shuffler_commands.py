"""``ldp-aggregator shuffler``: run a shuffler in front of a collector (ldp_telemetry.shuffler)."""

from __future__ import annotations

import json
import os
import sys

import click

from ldp_telemetry.aggregator import serving


@click.command()
@click.option("--upstream", required=True, help="The collector's base URL.")
@click.option(
    "--token",
    envvar="LDP_SHUFFLER_TOKEN",
    required=True,
    help="A shuffler token of the collector (ldp-aggregator tokens create --role shuffler); "
    "better given as LDP_SHUFFLER_TOKEN than on the command line.",
)
@click.option(
    "--spool",
    default="shuffler-spool.sqlite3",
    show_default=True,
    help="The SQLite file reports wait in.",
)
@click.option(
    "--batch-min",
    default=1000,
    show_default=True,
    type=click.IntRange(1),
    help="Distinct uploads a forwarded batch is drawn from, at least.",
)
@click.option(
    "--batch-max",
    default=5000,
    show_default=True,
    type=click.IntRange(1),
    help="Reports per forwarded batch, at most (the collector's per-batch limit).",
)
@click.option(
    "--capacity",
    default=1_000_000,
    show_default=True,
    type=click.IntRange(1),
    help="Waiting reports the spool holds; beyond, uploads get 503 + Retry-After.",
)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8100, show_default=True, type=click.IntRange(0, 65535))
def shuffler(
    upstream: str,
    token: str,
    spool: str,
    batch_min: int,
    batch_max: int,
    capacity: int,
    host: str,
    port: int,
) -> None:
    """Serve a shuffler: devices upload here; shuffled batches go to the collector."""
    if batch_max < batch_min:
        raise click.BadParameter("--batch-max must be at least --batch-min")
    settings = {
        "UPSTREAM": upstream,
        "TOKEN": token,
        "SPOOL": os.path.abspath(spool),
        "BATCH_MIN": batch_min,
        "BATCH_MAX": batch_max,
        "SPOOL_CAPACITY": capacity,
    }
    for key, value in settings.items():
        os.environ[f"LDP_SHUFFLER_{key}"] = json.dumps(value)
    # One worker: one forwarder thread owns the spool's batches. granian, like `serve`: slow
    # clients cost an await, not a thread (gunicorn gthread: 20 dribbling ones stopped it).
    argv = serving.command(serving.DEFAULT_SERVER, "ldp_telemetry.shuffler.wsgi:app", host, port, 1)
    click.echo(
        f"ldp-aggregator shuffler: serving on http://{host}:{port}, spool {settings['SPOOL']}, "
        f"batches of ≥ {batch_min} uploads to {upstream}",
        err=True,
    )
    sys.stderr.flush()
    os.execv(sys.executable, argv)
