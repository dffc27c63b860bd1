"""The JSON API: one Flask blueprint per concern (thin adapters over the core), served on the
collector's app by :func:`ldp_telemetry.aggregator.api.routes.init_app`."""
