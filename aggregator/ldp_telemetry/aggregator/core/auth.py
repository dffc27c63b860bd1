"""Bearer tokens: admin, analyst and shuffler roles, and per-task upload keys.

Tokens are random strings shown once; only their SHA-256 is kept (in the database, or
derived from ``ADMIN_TOKEN`` / ``ANALYST_TOKEN`` given in the configuration) and compared
with :func:`hmac.compare_digest`. A token is high-entropy, so an unsalted hash is enough.
An admin token also works wherever an analyst token does. :class:`Roles` says who a token
is; the composition root (ldp_telemetry.aggregator.compose) makes one and gives it to the API,
whose decorator asks a view's role (ldp_telemetry.aggregator.api.auth), and to the dashboard.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ldp_telemetry.aggregator.core.problems import ApiError
from ldp_telemetry.aggregator.store import Store
from ldp_telemetry.shared.contract import FORBIDDEN, UNAUTHORIZED

# A shuffler token (ldp_telemetry.shuffler) only forwards shuffled batches: nothing else.
ROLES = ("admin", "analyst", "shuffler")
_GRANTS = {"admin": {"admin", "analyst"}, "analyst": {"analyst"}, "shuffler": {"shuffler"}}
_CONFIG_KEYS = {"admin": "ADMIN_TOKEN", "analyst": "ANALYST_TOKEN"}


def configured_tokens(config: Mapping[str, Any]) -> dict[str, str]:
    """Return the configured tokens' hashes by role (``ADMIN_TOKEN`` first: it wins a tie)."""
    return {role: hash_token(config[key]) for role, key in _CONFIG_KEYS.items() if config.get(key)}


def new_token() -> str:
    """Return a fresh random token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """Return the hex SHA-256 a token is stored as."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def parse_bearer(authorization: str | None) -> str | None:
    """Return the token of an ``Authorization: Bearer <token>`` header value, or None."""
    scheme, _, token = (authorization or "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def role_of_digest(digest: str, configured: Mapping[str, str], store: Store) -> str | None:
    """Return the role a token's SHA-256 grants: a configured token's, else the store's."""
    for role, expected in configured.items():
        if hmac.compare_digest(digest, expected):
            return role
    # Looked up by its hash: timing can reveal at most a prefix of a SHA-256, not the token.
    return store.token_role(digest)


@dataclass(frozen=True)
class Roles:
    """Who a token is: the configured tokens (by role, hashed), then the store's."""

    configured: Mapping[str, str]
    store: Store

    @classmethod
    def of(cls, config: Mapping[str, Any], store: Store) -> Roles:
        """Return the roles of the configured tokens (``ADMIN_TOKEN``, ...) and the store's."""
        return cls(configured_tokens(config), store)

    def of_digest(self, digest: str) -> str | None:
        """Return the role a token's SHA-256 grants (a dashboard session keeps that)."""
        return role_of_digest(digest, self.configured, self.store)

    def of_token(self, token: str) -> str | None:
        """Return the role a token grants, or None."""
        return self.of_digest(hash_token(token))


def check_role(role: str, granted: str | None) -> None:
    """Refuse with 401 (no or unknown token) or 403 (a token of a weaker role)."""
    if granted is None:
        raise unauthorized(
            f"this endpoint needs {_a(role)} token: send 'Authorization: Bearer <token>'"
        )
    if role not in _GRANTS[granted]:
        raise ApiError(403, FORBIDDEN, f"{_a(granted)} token cannot do this; use {_a(role)} token")


def _a(role: str) -> str:
    """Return a role with its article ("an admin", "a shuffler")."""
    return f"{'an' if role[0] in 'aeiou' else 'a'} {role}"


def check_upload_key(expected_hash: str | None, token: str | None) -> None:
    """Refuse an upload whose task needs an upload key it does not carry (``token``)."""
    if expected_hash is None:
        return
    if token is None or not hmac.compare_digest(hash_token(token), expected_hash):
        raise unauthorized(
            "this task needs its upload key: send 'Authorization: Bearer <upload key>'"
        )


def unauthorized(detail: str) -> ApiError:
    """Return the 401 problem, with the WWW-Authenticate header it needs."""
    error = ApiError(401, UNAUTHORIZED, detail)
    error.headers["WWW-Authenticate"] = 'Bearer realm="ldp-aggregator"'
    return error
