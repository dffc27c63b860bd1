"""The application factory (Flask's tutorial pattern: no module-level app)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from flask import Flask
from flask.json.provider import DefaultJSONProvider

from ldp_telemetry.aggregator.api import auth, errors, metrics, resources, settings
from ldp_telemetry.aggregator.core import intake, quotas


def create_app(test_config: Mapping[str, Any] | None = None) -> Flask:
    """Return a configured aggregator app.

    Configuration (:func:`ldp_telemetry.aggregator.api.settings.load`):
    :data:`ldp_telemetry.aggregator.core.config.DEFAULTS`, then ``config.py`` in the instance
    folder, then ``LDP_*`` environment variables, then ``test_config``.
    """
    # Named for the package; its folders given, as ldp_telemetry is a namespace package.
    app = Flask(
        settings.APP_NAME,
        instance_relative_config=True,
        root_path=settings.ROOT_PATH,
        instance_path=settings.instance_folder(),
    )
    app.config.update(settings.load(app.instance_path, test_config))
    if isinstance(app.json, DefaultJSONProvider):  # Flask's own provider: always, here
        app.json.sort_keys = False  # answers keep their fields in the order written
    auth.init_app(app)
    # werkzeug's request log line starts with the client's IP address: never log it.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)

    errors.init_app(app)
    metrics.init_app(app)
    resources.init_app(app)
    app.extensions[quotas.EXTENSION] = quotas.init_app(
        float(app.config["QUOTA_RATE"]), float(app.config["QUOTA_BURST"])
    )
    app.extensions[intake.EXTENSION] = intake.init_app(
        resources.get_store_of(app), app.extensions[quotas.EXTENSION], app.config
    )
    from ldp_telemetry.aggregator.api import estimates, heavy_hitters, ingest, ops, shuffled, tasks

    for module in (tasks, ingest, estimates, heavy_hitters, ops):
        app.register_blueprint(module.bp)
    app.register_blueprint(shuffled.bp)  # batches from a shuffler (ldp_telemetry.shuffler)
    from ldp_telemetry.aggregator import dashboard  # the analyst pages (/dashboard)

    app.register_blueprint(dashboard.bp)
    dashboard.init_app(app)
    return app
