"""The collector's composition root: the one place its parts are built and wired.

:func:`build` reads the settings (:mod:`ldp_telemetry.aggregator.core.config`), opens the store,
makes who-a-token-is (:class:`~ldp_telemetry.aggregator.core.auth.Roles`), the upload quotas
and the intake (with this process's group committer), and a Flask app on which the JSON API
(:mod:`ldp_telemetry.aggregator.api.routes`) and the dashboard
(:mod:`ldp_telemetry.aggregator.dashboard`) are served side by side, each given what it reads.
The servers are given the intake from here (ldp_telemetry.aggregator.serving.wsgi), never dig
it out of the app; ``ldp-aggregator serve`` builds one to check the database before its
workers start. Every other command opens a store directly (ldp_telemetry.aggregator.cli).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flask import Flask
from flask.json.provider import DefaultJSONProvider

from ldp_telemetry.aggregator import dashboard
from ldp_telemetry.aggregator.api import routes
from ldp_telemetry.aggregator.core import config, quotas
from ldp_telemetry.aggregator.core.auth import Roles
from ldp_telemetry.aggregator.core.intake import Intake
from ldp_telemetry.aggregator.core.intake import init_app as make_intake
from ldp_telemetry.aggregator.store import Store, open_store

APP_NAME = "ldp_telemetry.aggregator"


@dataclass(frozen=True)
class Collector:
    """One process's collector: its WSGI app and the parts the servers are given."""

    app: Flask
    settings: Mapping[str, Any]
    store: Store
    intake: Intake

    @property
    def max_body(self) -> int:
        """Return the largest request body accepted (``MAX_BODY_BYTES``)."""
        return int(self.settings["MAX_BODY_BYTES"])


def build(given: Mapping[str, Any] | None = None) -> Collector:
    """Return a collector configured by :func:`ldp_telemetry.aggregator.core.config.load`:
    defaults, ``config.py`` in the instance folder, ``LDP_*`` variables, then ``given``."""
    instance = config.instance_folder()
    settings = config.load(instance, given)
    store = open_store(str(settings["DATABASE"]), settings)
    store.initialize()
    roles = Roles.of(settings, store)
    limits = quotas.init_app(float(settings["QUOTA_RATE"]), float(settings["QUOTA_BURST"]))
    intake = make_intake(store, limits, settings)
    app = _flask_app(instance, settings)
    routes.init_app(app, store, roles, intake)
    dashboard.init_app(app, store, roles)  # the analyst pages (/dashboard)
    return Collector(app, settings, store, intake)


def create_app(test_config: Mapping[str, Any] | None = None) -> Flask:
    """Return a configured collector app (Flask's factory pattern: no module-level app)."""
    return build(test_config).app


def _flask_app(instance: str, settings: Mapping[str, Any]) -> Flask:
    # Named for the package; its folders given, as ldp_telemetry is a namespace package.
    app = Flask(APP_NAME, root_path=str(config.PACKAGE_FOLDER), instance_path=instance)
    app.config.update(settings)
    app.config["MAX_CONTENT_LENGTH"] = int(settings["MAX_BODY_BYTES"])
    if isinstance(app.json, DefaultJSONProvider):  # Flask's own provider: always, here
        app.json.sort_keys = False  # answers keep their fields in the order written
    # werkzeug's request log line starts with the client's IP address: never log it.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    return app
