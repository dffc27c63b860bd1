"""``ldp-aggregator tokens``: create, list, revoke and rotate bearer tokens.

Only a token's SHA-256 is stored. Commands name a stored token by its id: the first 12
hex digits of that hash (any unique prefix of at least 8 works). Tokens given in the
environment (``LDP_ADMIN_TOKEN`` / ``LDP_ANALYST_TOKEN``) are not stored: unset them to
revoke them.
"""

from __future__ import annotations

import datetime as dt
import json

import click

from ldp_telemetry.aggregator.cli.context import database_option, open_collector
from ldp_telemetry.aggregator.core.auth import ROLES
from ldp_telemetry.aggregator.store.interface import StoredToken

ID_DIGITS = 12


@click.group()
def tokens() -> None:
    """Create, list, revoke and rotate admin and analyst tokens."""


@tokens.command("create")
@database_option
@click.option("--role", required=True, type=click.Choice(ROLES))
def create_token(role: str) -> None:
    """Print a new token once; only its SHA-256 is stored."""
    from ldp_telemetry.aggregator.core.auth import hash_token, new_token

    token = new_token()
    open_collector().store.add_token(hash_token(token), role)
    click.echo(token)


@tokens.command("list")
@database_option
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
def list_tokens(fmt: str) -> None:
    """List stored tokens: id, role, creation time (never the token itself)."""
    stored = open_collector().store.list_tokens()
    rows = [
        {
            "id": t.token_hash[:ID_DIGITS],
            "role": t.role,
            "created": dt.datetime.fromtimestamp(t.created_at, dt.timezone.utc).isoformat(),
        }
        for t in stored
    ]
    if fmt == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    click.echo(f"{'id':<{ID_DIGITS}}  {'role':<8} created (UTC)")
    for row in rows:
        click.echo(f"{row['id']:<{ID_DIGITS}}  {row['role']:<8} {row['created']}")


@tokens.command("revoke")
@database_option
@click.argument("token_id")
def revoke_token(token_id: str) -> None:
    """Revoke a stored token now (requests with it get 401 from then on)."""
    store = open_collector().store
    token = _find(store.list_tokens(), token_id)
    store.revoke_token(token.token_hash)
    click.echo(f"revoked {token.role} token {token.token_hash[:ID_DIGITS]}")


@tokens.command("rotate")
@database_option
@click.argument("token_id")
def rotate_token(token_id: str) -> None:
    """Print a new token with the same role, then revoke the old one."""
    from ldp_telemetry.aggregator.core.auth import hash_token, new_token

    store = open_collector().store
    old = _find(store.list_tokens(), token_id)
    token = new_token()
    store.add_token(hash_token(token), old.role)  # the new one works before the old stops
    store.revoke_token(old.token_hash)
    click.echo(token)
    click.echo(f"revoked {old.role} token {old.token_hash[:ID_DIGITS]}", err=True)


def _find(stored: list[StoredToken], token_id: str) -> StoredToken:
    prefix = token_id.strip().lower()
    if len(prefix) < 8:
        raise click.ClickException(
            f"a token id has at least 8 hex digits, got {token_id!r}; "
            "see 'ldp-aggregator tokens list'"
        )
    matches = [t for t in stored if t.token_hash.startswith(prefix)]
    if not matches:
        raise click.ClickException(
            f"no stored token with id {token_id!r}; see 'ldp-aggregator tokens list'"
        )
    if len(matches) > 1:
        raise click.ClickException(
            f"{len(matches)} tokens start with {token_id!r}; give more digits"
        )
    return matches[0]
