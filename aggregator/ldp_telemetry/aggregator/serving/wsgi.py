"""The WSGI entry: ``ldp-aggregator serve`` (any --server), or
``gunicorn 'ldp_telemetry.aggregator.serving.wsgi:app'``.

Configured by LDP_* variables.
"""

from ldp_telemetry.aggregator import create_app

app = create_app()
