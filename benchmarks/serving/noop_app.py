"""The ceiling: a Flask app that reads an upload's body and answers a fixed small JSON.

Served by the same command lines as the collector (ldp_telemetry.aggregator.serving.command), so the
difference between the two is the collector's own work per request.
"""

from __future__ import annotations

from flask import Flask, Response, request

app = Flask(__name__)
ANSWER = b'{"accepted":1,"rejected":[]}'


@app.post("/v1/tasks/<task_id>/reports")
def reports(task_id: str) -> Response:
    request.get_data()  # the body crosses the WSGI boundary as the collector's does
    return Response(ANSWER, content_type="application/json")


@app.get("/readyz")
def ready() -> Response:
    return Response(b'{"status":"ready"}', content_type="application/json")
