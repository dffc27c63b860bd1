"""The application factory (Flask's tutorial pattern: no module-level app)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from flask import Flask

from aggregator import auth, intake, metrics, problems, quotas, sealing_keys, store
from aggregator.config import DEFAULTS


def create_app(test_config: Mapping[str, Any] | None = None) -> Flask:
    """Return a configured aggregator app.

    Configuration: :data:`aggregator.config.DEFAULTS`, then ``config.py`` in the instance
    folder, then ``LDP_*`` environment variables, then ``test_config``.
    """
    app = Flask(__name__.rpartition(".")[0], instance_relative_config=True)
    app.config.from_mapping(DEFAULTS)
    app.config.from_pyfile("config.py", silent=True)
    app.config.from_prefixed_env("LDP")
    if test_config is not None:
        app.config.from_mapping(test_config)
    _normalize(app)
    auth.init_app(app)
    # werkzeug's request log line starts with the client's IP address: never log it.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)

    problems.init_app(app)
    metrics.init_app(app)
    store.init_app(app)
    sealing_keys.init_app(app)  # before intake: it resolves SEAL_KEYS
    app.extensions[quotas.EXTENSION] = quotas.init_app(
        float(app.config["QUOTA_RATE"]), float(app.config["QUOTA_BURST"])
    )
    app.extensions[intake.EXTENSION] = intake.init_app(
        store.get_store_of(app), app.extensions[quotas.EXTENSION], app.config
    )
    from aggregator import estimates, heavy_hitters, ingest, ops, shuffled, tasks

    for module in (tasks, ingest, estimates, heavy_hitters, ops):
        app.register_blueprint(module.bp)
    app.register_blueprint(shuffled.bp)  # batches from a shuffler (aggregator.shuffler)
    from aggregator import dashboard  # the analyst pages (/dashboard)

    app.register_blueprint(dashboard.bp)
    dashboard.init_app(app)
    return app


def _normalize(app: Flask) -> None:
    # Environment values are parsed as JSON, so a numeric-looking token arrives as an int.
    for key in ("ADMIN_TOKEN", "ANALYST_TOKEN"):
        if app.config.get(key) is not None:
            app.config[key] = str(app.config[key])
    app.config["MAX_CONTENT_LENGTH"] = int(app.config["MAX_BODY_BYTES"])
    app.json.sort_keys = False  # type: ignore[attr-defined]
