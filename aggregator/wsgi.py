"""The WSGI entry: ``ldp-aggregator serve`` (any --server) or ``gunicorn 'aggregator.wsgi:app'``.

Configured by LDP_* variables.
"""

from aggregator import create_app

app = create_app()
