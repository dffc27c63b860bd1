"""What the API's views are given: the store, who a token is, and the intake.

The composition root (ldp_telemetry.aggregator.compose) builds them once per process and hands
them to :func:`init_app`; the views find them in ``app.extensions``, Flask's place for an
app's resources. The API opens nothing itself.
"""

from __future__ import annotations

from flask import Flask, current_app

from ldp_telemetry.aggregator.core.auth import Roles
from ldp_telemetry.aggregator.core.intake import Intake
from ldp_telemetry.aggregator.store import Store

STORE, ROLES, INTAKE = "ldp_store", "ldp_roles", "ldp_intake"


def init_app(app: Flask, store: Store, roles: Roles, intake: Intake) -> None:
    """Keep what the views are given on the app."""
    app.extensions[STORE], app.extensions[ROLES], app.extensions[INTAKE] = store, roles, intake


def get_store() -> Store:
    """Return the current app's store."""
    return get_store_of(current_app)


def get_store_of(app: Flask) -> Store:
    """Return an app's store (outside a request)."""
    store: Store = app.extensions[STORE]
    return store


def get_roles() -> Roles:
    """Return who the current app's tokens are."""
    roles: Roles = current_app.extensions[ROLES]
    return roles


def get_intake() -> Intake:
    """Return the current app's intake (uploads, and batches from a shuffler)."""
    intake: Intake = current_app.extensions[INTAKE]
    return intake
