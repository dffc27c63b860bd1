"""The WSGI entry for gunicorn: ``gunicorn 'aggregator.wsgi:app'`` (configured by LDP_*)."""

from aggregator import create_app

app = create_app()
