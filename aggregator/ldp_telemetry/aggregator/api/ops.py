"""Operations: liveness, readiness, Prometheus metrics and the OpenAPI document."""

from __future__ import annotations

import logging
from typing import Any

from flask import Blueprint, Response

from ldp_telemetry.aggregator.api import metrics
from ldp_telemetry.aggregator.api.openapi import document
from ldp_telemetry.aggregator.api.resources import get_store
from ldp_telemetry.aggregator.core.problems import ApiError

bp = Blueprint("ops", __name__)
log = logging.getLogger(__name__)


@bp.get("/healthz")
def healthz() -> dict[str, str]:
    """Answer while the process serves requests."""
    return {"status": "ok"}


@bp.get("/readyz")
def readyz() -> dict[str, str]:
    """Answer 200 only if the database accepts a write."""
    try:
        get_store().check_writable()
    except Exception as error:  # any backend failure means "not ready", not a 500
        log.warning("not ready: %s", error)
        raise ApiError(
            503, "not_ready", "the database cannot be written; see the server log"
        ) from None
    return {"status": "ready"}


@bp.get("/metrics")
def prometheus() -> Response:
    """Return the Prometheus metrics."""
    return metrics.render()


@bp.get("/v1/openapi.json")
def openapi() -> dict[str, Any]:
    """Return the OpenAPI 3.1 description of this API."""
    return document()
