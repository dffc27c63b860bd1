"""Roles in the Flask app: the configured tokens, and the decorator a view asks one with.

The checks themselves are ldp_telemetry.aggregator.core.auth.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import ParamSpec, TypeVar

from flask import Flask, current_app, request

from ldp_telemetry.aggregator.api.resources import get_store
from ldp_telemetry.aggregator.core import auth

EXTENSION = "ldp_config_tokens"
P = ParamSpec("P")
R = TypeVar("R")


def init_app(app: Flask) -> None:
    """Hash the configured tokens once."""
    app.extensions[EXTENSION] = auth.configured_tokens(app.config)


def bearer_token() -> str | None:
    """Return the request's bearer token, or None if there is none."""
    return auth.parse_bearer(request.headers.get("Authorization"))


def role_of(token: str) -> str | None:
    """Return the role a token grants, or None."""
    return role_of_digest(auth.hash_token(token))


def role_of_digest(digest: str) -> str | None:
    """Return the role a token grants, given by its SHA-256 (a dashboard session keeps that)."""
    return auth.role_of_digest(digest, current_app.extensions[EXTENSION], get_store())


def require_role(role: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Refuse the view with 401 (no or unknown token) or 403 (token of a weaker role)."""

    def decorate(view: Callable[P, R]) -> Callable[P, R]:
        @wraps(view)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            token = bearer_token()
            auth.check_role(role, role_of(token) if token else None)
            return view(*args, **kwargs)

        return wrapper

    return decorate
