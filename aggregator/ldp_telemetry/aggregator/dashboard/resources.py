"""What the dashboard is given: the store and who a token is.

The composition root (ldp_telemetry.aggregator.compose) hands them to
:func:`ldp_telemetry.aggregator.dashboard.init_app`; pages find them in ``app.extensions``. The
dashboard reads nothing of the JSON API beside it: both call the core.
"""

from __future__ import annotations

from dataclasses import dataclass

from flask import Flask, current_app

from ldp_telemetry.aggregator.core.auth import Roles
from ldp_telemetry.aggregator.store import Store

EXTENSION = "ldp_dashboard"


@dataclass(frozen=True)
class Given:
    """The dashboard's resources."""

    store: Store
    roles: Roles


def keep(app: Flask, store: Store, roles: Roles) -> None:
    """Keep what the dashboard is given on the app."""
    app.extensions[EXTENSION] = Given(store, roles)


def get_store() -> Store:
    """Return the current app's store."""
    given: Given = current_app.extensions[EXTENSION]
    return given.store


def role_of_digest(digest: str) -> str | None:
    """Return the role a token's SHA-256 grants in the current app, or None."""
    given: Given = current_app.extensions[EXTENSION]
    return given.roles.of_digest(digest)
