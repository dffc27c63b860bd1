"""The analyst dashboard: server-rendered pages of the collector under ``/dashboard``.

Tasks, reports per bucket, estimates over a range and over time with confidence bands,
discovered strings and the parameter planner, drawn as SVG on the server (no script, no
CDN). Every number comes from the core's functions, the ones the JSON API calls. Access: a
login with the analyst (or admin) token, then a session cookie
(:mod:`ldp_telemetry.aggregator.dashboard.access`). The composition root
(ldp_telemetry.aggregator.compose) serves it on the collector's app with :func:`init_app`.
"""

from __future__ import annotations

from flask import Flask

from ldp_telemetry.aggregator.core.auth import Roles
from ldp_telemetry.aggregator.dashboard import access, resources
from ldp_telemetry.aggregator.dashboard.views import bp
from ldp_telemetry.aggregator.store import Store

__all__ = ["bp", "init_app"]


def init_app(app: Flask, store: Store, roles: Roles) -> None:
    """Serve the dashboard on ``app``, its pages reading ``store`` and ``roles``."""
    resources.keep(app, store, roles)
    app.register_blueprint(bp)
    access.init_app(app)
