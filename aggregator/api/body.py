"""Read a Flask request's JSON body with the core's checks (aggregator.core.body)."""

from __future__ import annotations

from typing import Any

from flask import current_app, request

from aggregator.core.body import decode_json


def json_body() -> Any:
    """Return the request's parsed JSON body, or raise an ApiError saying what is wrong."""
    limit = int(current_app.config["MAX_BODY_BYTES"])
    return decode_json(
        request.headers.get("Content-Type"),
        request.headers.get("Content-Encoding"),
        request.stream.read(limit + 1),
        limit,
    )
