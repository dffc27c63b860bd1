"""Ingest: a batch of privatized reports, counted once each, acknowledged after commit.

The Flask door to :mod:`ldp_telemetry.aggregator.core.intake` (gunicorn servers, the test client);
the default server runs the same sequence without Flask
(ldp_telemetry.aggregator.serving.rsgi_bridge).
"""

from __future__ import annotations

import time

from flask import Blueprint, Response, request

from ldp_telemetry.aggregator.api.body import declared_too_large, read_body
from ldp_telemetry.aggregator.api.resources import get_intake
from ldp_telemetry.aggregator.core.intake import ROUTE, Headers
from ldp_telemetry.shared.contract import PROTOCOL_HEADER

bp = Blueprint("ingest", __name__)


@bp.post(ROUTE)
def upload(task_id: str) -> Response:
    """Validate a batch, add its new reports to the sums and say what was refused."""
    intake = get_intake()
    headers = Headers(
        request.headers.get("Content-Type"),
        request.headers.get("Content-Encoding"),
        request.headers.get("Authorization"),
        request.headers.get(PROTOCOL_HEADER),
        request.content_length,
    )
    # A declared length over the limit is left unread: the sequence refuses it first.
    unread = declared_too_large(intake.max_body)
    body = b"" if unread else read_body(intake.max_body)
    status, answer_headers, payload = intake.upload(task_id, headers, body, time.time())
    return Response(payload, status=status, headers=answer_headers)
