"""The shuffler's WSGI entry point: ``aggregator.shuffler.wsgi:app`` (configured by
``LDP_SHUFFLER_*``, which ``ldp-aggregator shuffler`` sets)."""

from aggregator.shuffler.app import app_from_environment

app = app_from_environment()
