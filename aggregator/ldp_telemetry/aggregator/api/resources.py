"""The app's resources: its store, opened once and kept in ``app.extensions``."""

from __future__ import annotations

from flask import Flask, current_app

from ldp_telemetry.aggregator.store import Store, open_store

EXTENSION = "ldp_store"


def init_app(app: Flask) -> None:
    """Open the configured store (creating its schema) and attach it to the app."""
    store = open_store(str(app.config["DATABASE"]), app.config)
    store.initialize()
    app.extensions[EXTENSION] = store


def get_store() -> Store:
    """Return the current app's store."""
    return get_store_of(current_app)


def get_store_of(app: Flask) -> Store:
    """Return an app's store (outside a request)."""
    store: Store = app.extensions[EXTENSION]
    return store
