"""The WSGI entry: ``ldp-aggregator serve`` (any --server), or
``gunicorn 'aggregator.serving.wsgi:app'``.

Configured by LDP_* variables.
"""

from aggregator import create_app

app = create_app()
