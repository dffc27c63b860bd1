"""Operations: liveness, readiness, Prometheus metrics and the OpenAPI document."""

from __future__ import annotations

import logging
from typing import Any

from flask import Blueprint, Response

from ldp_telemetry.aggregator.api import metrics
from ldp_telemetry.aggregator.api.openapi import document
from ldp_telemetry.aggregator.api.resources import get_store
from ldp_telemetry.aggregator.core.problems import ApiError
from ldp_telemetry.shared.contract import (
    HEALTH_PATH,
    METRICS_PATH,
    NOT_READY,
    OPENAPI_PATH,
    READY_PATH,
)

bp = Blueprint("ops", __name__)
log = logging.getLogger(__name__)


@bp.get(HEALTH_PATH)
def healthz() -> dict[str, str]:
    """Answer while the process serves requests."""
    return {"status": "ok"}


@bp.get(READY_PATH)
def readyz() -> dict[str, str]:
    """Answer 200 only if the database accepts a write."""
    try:
        get_store().check_writable()
    except Exception as error:  # any backend failure means "not ready", not a 500
        log.warning("not ready: %s", error)
        raise ApiError(
            503, NOT_READY, "the database cannot be written; see the server log"
        ) from None
    return {"status": "ready"}


@bp.get(METRICS_PATH)
def prometheus() -> Response:
    """Return the Prometheus metrics."""
    return metrics.render()


@bp.get(OPENAPI_PATH)
def openapi() -> dict[str, Any]:
    """Return the OpenAPI 3.1 description of this API."""
    return document()
