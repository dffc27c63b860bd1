"""Ingest: a batch of privatized reports, counted once each, acknowledged after commit.

The Flask door to :mod:`aggregator.core.intake` (gunicorn servers, the test client); the
default server runs the same sequence without Flask (aggregator.serving.rsgi_bridge).
"""

from __future__ import annotations

import time

from flask import Blueprint, Response, current_app, request

from aggregator.core.intake import EXTENSION, ROUTE, Headers, Intake
from shared.contract import PROTOCOL_HEADER

bp = Blueprint("ingest", __name__)


@bp.post(ROUTE)
def upload(task_id: str) -> Response:
    """Validate a batch, add its new reports to the sums and say what was refused."""
    intake: Intake = current_app.extensions[EXTENSION]
    declared = request.content_length
    headers = Headers(
        request.headers.get("Content-Type"),
        request.headers.get("Content-Encoding"),
        request.headers.get("Authorization"),
        request.headers.get(PROTOCOL_HEADER),
        declared,
    )
    # A declared length over the limit: the core refuses it unread (werkzeug would raise
    # its own 413 on touching the stream); a chunked body past it raises werkzeug's 413,
    # which aggregator.api.errors answers with the core's document.
    too_long = declared is not None and declared > intake.max_body
    body = b"" if too_long else request.stream.read(intake.max_body + 1)
    status, answer_headers, payload = intake.upload(task_id, headers, body, time.time())
    return Response(payload, status=status, headers=answer_headers)
