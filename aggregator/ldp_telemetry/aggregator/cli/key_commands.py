"""``ldp-aggregator keys``: the HPKE keys that open sealed tasks' reports (new, list, retire).

The key file is ``--keys PATH``, else the app's ``SEAL_KEYS`` (``LDP_SEAL_KEYS``; default
beside a SQLite database, named after it, else ``seal-keys.json`` in the instance folder).
A running collector picks changes up within a second. Rotation: ``keys new`` (sealed
tasks publish the new key at once; the old one keeps opening), then, once the acceptance
window has passed, ``keys retire OLD_ID`` (ldp_telemetry.aggregator.core.sealing_keys).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import click

from ldp_telemetry.aggregator.cli.context import collector_settings, database_option

KEYS_HELP = (
    "The key file (default: LDP_SEAL_KEYS, else beside a SQLite database: x.sqlite3 -> "
    "x.seal-keys.json, else seal-keys.json in the instance folder)."
)


def _key_file(given: str | None) -> tuple[Path, int]:
    """Return the key file and the acceptance window (s) of the collector's settings.

    ``LDP_SEAL_KEYS`` is read with the other settings (as ``serve`` reads it, JSON or a
    plain path), not by click, so both commands open the same file."""
    config = collector_settings()
    path = Path(given) if given else Path(str(config["SEAL_KEYS"]))
    return path, int(config["ACCEPTANCE_WINDOW"])


@click.group()
def keys() -> None:
    """Create, list and retire the keys that open sealed reports."""


@keys.command("new")
@database_option
@click.option("--keys", "given", default=None, help=KEYS_HELP)
def new_key(given: str | None) -> None:
    """Create a key and make it current; print its id (older keys keep opening)."""
    from ldp_telemetry.aggregator.core.sealing_keys import add_key

    path, _ = _key_file(given)
    entry = add_key(path)
    click.echo(entry.key_id)


@keys.command("list")
@database_option
@click.option("--keys", "given", default=None, help=KEYS_HELP)
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
def list_keys(given: str | None, fmt: str) -> None:
    """List the keys: id, state (current, or opening until retired), creation, public key."""
    from ldp_telemetry.aggregator.core.sealing_keys import read_keys
    from ldp_telemetry.shared.wire import b64encode

    path, _ = _key_file(given)
    entries = read_keys(path)
    rows = [
        {
            "key_id": e.key_id,
            "state": "current" if i == len(entries) - 1 else "opening",
            "created": dt.datetime.fromtimestamp(e.created, dt.timezone.utc).isoformat(),
            "public_key": b64encode(e.public.public_key),
        }
        for i, e in enumerate(entries)
    ]
    if fmt == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    click.echo(f"{'key_id':<12}  {'state':<8} {'created (UTC)':<25} public_key")
    for row in rows:
        click.echo(
            f"{row['key_id']:<12}  {row['state']:<8} {row['created']:<25} {row['public_key']}"
        )


@keys.command("retire")
@database_option
@click.option("--keys", "given", default=None, help=KEYS_HELP)
@click.option(
    "--now", is_flag=True, help="Retire it even if superseded less than the acceptance window ago."
)
@click.argument("key_id")
def retire(given: str | None, now: bool, key_id: str) -> None:
    """Delete a superseded key: reports sealed to it are refused from then on."""
    from ldp_telemetry.aggregator.core.sealing_keys import retire_key

    path, window = _key_file(given)
    try:
        retire_key(path, key_id, min_age=0 if now else window)
    except ValueError as error:
        raise click.ClickException(str(error)) from None
    click.echo(f"retired key {key_id}")
