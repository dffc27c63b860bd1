"""Storage of the collector and its wiring into the app.

:mod:`~aggregator.store.interface` says what the views need, :mod:`~aggregator.store.backends`
opens the backend a database URL names, :mod:`~aggregator.store.sqlite` is the embedded
backend (with :mod:`~aggregator.store.staging`, :mod:`~aggregator.store.folding` and
:mod:`~aggregator.store.streamed` as its pieces). Views import from this package only.
"""

from __future__ import annotations

import logging
import os

from flask import Flask, Response, current_app

from aggregator.core.problems import ApiError, error_response
from aggregator.store.backends import open_store
from aggregator.store.interface import (
    ShuffledBatch,
    ShuffledWindow,
    Store,
    StoredTask,
    StoredToken,
    StoreFull,
    StoreUnavailable,
    SumsSource,
    SumsView,
    TaskExists,
    Upload,
)

__all__ = [
    "ShuffledBatch",
    "ShuffledWindow",
    "Store",
    "StoreFull",
    "StoreUnavailable",
    "StoredTask",
    "StoredToken",
    "SumsSource",
    "SumsView",
    "TaskExists",
    "Upload",
    "get_store",
    "get_store_of",
    "init_app",
    "open_store",
    "unavailable_error",
]

EXTENSION = "ldp_store"
log = logging.getLogger(__name__)


def init_app(app: Flask) -> None:
    """Open the configured store (creating its schema) and attach it to the app."""
    database = app.config["DATABASE"] or os.path.join(app.instance_path, "ldp-aggregator.sqlite3")
    app.config["DATABASE"] = database
    store = open_store(str(database), app.config)
    store.initialize()
    app.extensions[EXTENSION] = store
    app.register_error_handler(StoreUnavailable, _unavailable)


def _unavailable(error: StoreUnavailable) -> Response:
    return error_response(unavailable_error(error))


def unavailable_error(error: StoreUnavailable) -> ApiError:
    """Log a store fault and return its retryable problem (507 disk full, else 503)."""
    # Nothing of the request was committed: a client may resend it as it is.
    log.warning("store unavailable: %s", error)
    if isinstance(error, StoreFull):
        answer = ApiError(
            507,
            "insufficient_storage",
            "the collector's disk is full; nothing was stored: retry after the Retry-After delay",
        )
        answer.headers["Retry-After"] = "60"
        return answer
    answer = ApiError(
        503,
        "unavailable",
        "the database cannot be written now; nothing was stored: retry after the Retry-After delay",
    )
    answer.headers["Retry-After"] = "1" if "locked" in str(error) else "10"
    return answer


def get_store() -> Store:
    """Return the current app's store."""
    return get_store_of(current_app)


def get_store_of(app: Flask) -> Store:
    """Return an app's store (outside a request)."""
    store: Store = app.extensions[EXTENSION]
    return store
