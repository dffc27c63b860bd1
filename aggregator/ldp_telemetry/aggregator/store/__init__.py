"""Storage of the collector.

:mod:`~ldp_telemetry.aggregator.store.interface` says what the views need,
:mod:`~ldp_telemetry.aggregator.store.backends` opens the backend a database URL names,
:mod:`~ldp_telemetry.aggregator.store.sqlite.backend` is the embedded backend (with
:mod:`~ldp_telemetry.aggregator.store.staging`, :mod:`~ldp_telemetry.aggregator.store.folding` and
:mod:`~ldp_telemetry.aggregator.store.streamed` as its pieces). The composition root
(ldp_telemetry.aggregator.compose) opens the app's store and gives it to the API and the
dashboard; the command line opens one directly.
"""

from __future__ import annotations

from ldp_telemetry.aggregator.store.backends import open_store
from ldp_telemetry.aggregator.store.interface import (
    ShuffledBatch,
    ShuffledWindow,
    SlicedSums,
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
    "SlicedSums",
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
