"""Ingest: a batch of privatized reports, counted once each, acknowledged after commit.

The Flask door to :mod:`aggregator.core.intake` (gunicorn servers, the test client); the default
server reaches the same code without Flask (aggregator.serving.rsgi_bridge).
"""

from __future__ import annotations

import time
from typing import Any

from flask import Blueprint, current_app, request

from aggregator.core.intake import EXTENSION, Headers, Intake
from shared.contract import PROTOCOL_HEADER

bp = Blueprint("ingest", __name__, url_prefix="/v1/tasks")


@bp.post("/<task_id>/reports")
def upload(task_id: str) -> dict[str, Any]:
    """Validate a batch, add its new reports to the sums and say what was refused."""
    intake: Intake = current_app.extensions[EXTENSION]
    headers = Headers(
        request.headers.get("Content-Type"),
        request.headers.get("Content-Encoding"),
        request.headers.get("Authorization"),
        request.headers.get(PROTOCOL_HEADER),
    )
    return intake.upload(task_id, headers, request.stream.read(intake.max_body + 1), time.time())
