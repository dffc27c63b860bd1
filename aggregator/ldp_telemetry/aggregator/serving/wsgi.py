"""The collector's WSGI entry: ``ldp-aggregator serve`` (any --server), or
``gunicorn 'ldp_telemetry.aggregator.serving.wsgi:app'``.

Configured by LDP_* variables. ``app`` is the collector's Flask app with the intake its uploads'
fast path runs (ldp_telemetry.aggregator.serving.rsgi_bridge), both from the composition root.
"""

from ldp_telemetry.aggregator.compose import build
from ldp_telemetry.aggregator.serving import APP_THREADS, Served

collector = build()
app = Served(collector.app, collector.max_body, APP_THREADS, collector.intake)
