"""Storage of the collector.

:mod:`~aggregator.store.interface` says what the views need, :mod:`~aggregator.store.backends`
opens the backend a database URL names, :mod:`~aggregator.store.sqlite` is the embedded
backend (with :mod:`~aggregator.store.staging`, :mod:`~aggregator.store.folding` and
:mod:`~aggregator.store.streamed` as its pieces). The app opens its store through
:mod:`aggregator.api.resources`; the command line opens one directly.
"""

from __future__ import annotations

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
    "open_store",
]
