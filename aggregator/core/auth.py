"""Bearer tokens: admin, analyst and shuffler roles, and per-task upload keys.

Tokens are random strings shown once; only their SHA-256 is kept (in the database, or
derived from ``ADMIN_TOKEN`` / ``ANALYST_TOKEN`` given in the configuration) and compared
with :func:`hmac.compare_digest`. A token is high-entropy, so an unsalted hash is enough.
An admin token also works wherever an analyst token does.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from flask import Flask, current_app, request

from aggregator.core.problems import ApiError
from aggregator.store import get_store

# A shuffler token (aggregator.shuffler) only forwards shuffled batches: nothing else.
ROLES = ("admin", "analyst", "shuffler")
_GRANTS = {"admin": {"admin", "analyst"}, "analyst": {"analyst"}, "shuffler": {"shuffler"}}
_CONFIG_KEYS = {"admin": "ADMIN_TOKEN", "analyst": "ANALYST_TOKEN"}
EXTENSION = "ldp_config_tokens"
View = TypeVar("View", bound=Callable[..., Any])


def init_app(app: Flask) -> None:
    """Hash the configured tokens once (``ADMIN_TOKEN`` first: it wins a tie)."""
    app.extensions[EXTENSION] = {
        role: hash_token(app.config[key])
        for role, key in _CONFIG_KEYS.items()
        if app.config.get(key)
    }


def new_token() -> str:
    """Return a fresh random token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """Return the hex SHA-256 a token is stored as."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def bearer_token() -> str | None:
    """Return the request's bearer token, or None if there is none."""
    return parse_bearer(request.headers.get("Authorization"))


def parse_bearer(authorization: str | None) -> str | None:
    """Return the token of an ``Authorization: Bearer <token>`` header value, or None."""
    scheme, _, token = (authorization or "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def role_of(token: str) -> str | None:
    """Return the role a token grants, or None."""
    return role_of_digest(hash_token(token))


def role_of_digest(digest: str) -> str | None:
    """Return the role a token grants, given by its SHA-256 (a dashboard session keeps that)."""
    for role, configured in current_app.extensions[EXTENSION].items():
        if hmac.compare_digest(digest, configured):
            return role
    # Looked up by its hash: timing can reveal at most a prefix of a SHA-256, not the token.
    return get_store().token_role(digest)


def require_role(role: str) -> Callable[[View], View]:
    """Refuse the view with 401 (no or unknown token) or 403 (token of a weaker role)."""

    def decorate(view: View) -> View:
        @wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            token = bearer_token()
            granted = role_of(token) if token else None
            if granted is None:
                raise unauthorized(
                    f"this endpoint needs an {role} token: send 'Authorization: Bearer <token>'"
                )
            if role not in _GRANTS[granted]:
                raise ApiError(
                    403, "forbidden", f"an {granted} token cannot do this; use an {role} token"
                )
            return view(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


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
    error = ApiError(401, "unauthorized", detail)
    error.headers["WWW-Authenticate"] = 'Bearer realm="ldp-aggregator"'
    return error
