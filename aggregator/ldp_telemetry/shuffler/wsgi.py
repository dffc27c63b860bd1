"""The shuffler's WSGI entry point: ``ldp_telemetry.shuffler.wsgi:app`` (configured by
``LDP_SHUFFLER_*``, which ``ldp-aggregator shuffler`` sets)."""

from ldp_telemetry.shuffler.app import app_from_environment

app = app_from_environment()
