"""The analyst dashboard: server-rendered pages of the collector under ``/dashboard``.

Tasks, reports per bucket, estimates over a range and over time with confidence bands,
discovered strings and the parameter planner, drawn as SVG on the server (no script, no
CDN). Every number comes from the JSON API's own functions. Access: a login with the
analyst (or admin) token, then a session cookie (:mod:`ldp_telemetry.aggregator.dashboard.access`).
"""

from ldp_telemetry.aggregator.dashboard.access import init_app
from ldp_telemetry.aggregator.dashboard.views import bp

__all__ = ["bp", "init_app"]
