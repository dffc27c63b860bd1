"""The collector's WSGI entry: ``ldp-aggregator serve`` (any --server), or
``gunicorn 'ldp_telemetry.aggregator.serving.wsgi:app'``.

Configured by LDP_* variables. ``app`` serves the collector's Flask app, and gives the RSGI bridge
(ldp_telemetry.aggregator.serving.rsgi_bridge) the intake its uploads' fast path runs: both built
by the composition root (ldp_telemetry.aggregator.compose).
"""

from ldp_telemetry.aggregator.compose import build
from ldp_telemetry.aggregator.serving import APP_THREADS, Served

collector = build()
app = Served(collector.app, collector.max_body, APP_THREADS, collector.intake)
