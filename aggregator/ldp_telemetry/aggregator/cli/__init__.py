"""The ``ldp-aggregator`` command: serve, manage tasks and tokens, query, export, back up.

``serve`` runs the app under granian (default) or gunicorn
(:mod:`ldp_telemetry.aggregator.serving`); every other command works directly on the database
(:mod:`ldp_telemetry.aggregator.cli.context` says which one). One module per job: serve, tasks,
tokens, analysis (estimates, heavy-hitters), compare, data (export, backup): each in its
``*_commands`` module.

Tokens: ``ldp-aggregator tokens create --role admin`` prints a new token once and stores
only its SHA-256. ``LDP_ADMIN_TOKEN`` / ``LDP_ANALYST_TOKEN`` in the environment are
accepted as well (handy for tests and demos).
"""

from __future__ import annotations

import click

from ldp_telemetry.aggregator.cli.analysis_commands import estimates, heavy_hitters
from ldp_telemetry.aggregator.cli.compare_commands import compare
from ldp_telemetry.aggregator.cli.context import DB_HELP
from ldp_telemetry.aggregator.cli.data_commands import backup, export, migrate
from ldp_telemetry.aggregator.cli.key_commands import keys
from ldp_telemetry.aggregator.cli.server_commands import serve
from ldp_telemetry.aggregator.cli.shuffler_commands import shuffler
from ldp_telemetry.aggregator.cli.task_commands import tasks
from ldp_telemetry.aggregator.cli.token_commands import tokens


@click.group()
@click.option("--db", default=None, envvar="LDP_DB", help=DB_HELP)
@click.pass_context
def main(ctx: click.Context, db: str | None) -> None:
    """Collect local-DP telemetry reports and answer estimates."""
    ctx.ensure_object(dict)
    if db:
        ctx.obj["db"] = db


for command in (
    serve,
    tasks,
    tokens,
    estimates,
    heavy_hitters,
    compare,
    export,
    backup,
    migrate,
    shuffler,
):
    main.add_command(command)
main.add_command(keys)  # the keys of sealed tasks (ldp_telemetry.aggregator.cli.key_commands)
