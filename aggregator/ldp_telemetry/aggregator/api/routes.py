"""The JSON API on an app: its blueprints, problem handlers and request metrics.

The composition root (ldp_telemetry.aggregator.compose) makes the app and gives the API what its
views read (:mod:`ldp_telemetry.aggregator.api.resources`); the API neither builds an app nor
knows the dashboard beside it.
"""

from __future__ import annotations

from flask import Flask

from ldp_telemetry.aggregator.api import (
    errors,
    estimates,
    heavy_hitters,
    ingest,
    metrics,
    ops,
    resources,
    shuffled,
    tasks,
)
from ldp_telemetry.aggregator.core.auth import Roles
from ldp_telemetry.aggregator.core.intake import Intake
from ldp_telemetry.aggregator.store import Store


def init_app(app: Flask, store: Store, roles: Roles, intake: Intake) -> None:
    """Serve the API on ``app``, its views reading ``store``, ``roles`` and ``intake``."""
    resources.init_app(app, store, roles, intake)
    errors.init_app(app)
    metrics.init_app(app)
    for module in (tasks, ingest, estimates, heavy_hitters, ops):
        app.register_blueprint(module.bp)
    app.register_blueprint(shuffled.bp)  # batches from a shuffler (ldp_telemetry.shuffler)
