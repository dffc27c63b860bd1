"""Roles in the Flask API: the decorator a view asks one with.

The checks themselves, and who a token is, are ldp_telemetry.aggregator.core.auth.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import ParamSpec, TypeVar

from flask import request

from ldp_telemetry.aggregator.api.resources import get_roles
from ldp_telemetry.aggregator.core import auth

P = ParamSpec("P")
R = TypeVar("R")


def bearer_token() -> str | None:
    """Return the request's bearer token, or None if there is none."""
    return auth.parse_bearer(request.headers.get("Authorization"))


def role_of(token: str) -> str | None:
    """Return the role a token grants in the current app, or None."""
    return get_roles().of_token(token)


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
