"""The demo's gateway: device uploads held, forwarded in batches, refusals counted."""

from __future__ import annotations

import gzip
import json

from demo.gateway import BATCH, Gateway
from ldp_telemetry.client import Request, Response


class Refusing:
    """An upstream collector that refuses every batch, remembering their sizes."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def handle(self, request: Request, *, timeout: float) -> Response:
        self.sizes.append(len(json.loads(request.body or b"")["reports"]))
        return Response(503)

    def close(self) -> None:
        pass


def upload(reports: list[dict], headers: dict[str, str]) -> Request:
    body = gzip.compress(json.dumps({"reports": reports}).encode())
    return Request("POST", "/v1/tasks/t/reports", headers, body)


def test_a_gzip_upload_is_read_whatever_the_header_case() -> None:
    gateway = Gateway("http://127.0.0.1:9")
    headers = {"content-type": "application/json", "content-encoding": "gzip"}
    answer = gateway.handle(upload([{"report_id": "a"}], headers), timeout=1.0)
    gateway.shutdown()
    assert answer.status == 200 and json.loads(answer.body)["accepted"] == 1


def test_a_refused_chunk_counts_its_own_reports() -> None:
    gateway, upstream = Gateway("http://127.0.0.1:9"), Refusing()
    gateway._upstream = upstream
    reports = [{"report_id": str(i)} for i in range(BATCH + 200)]
    gateway.handle(upload(reports, {"Content-Encoding": "gzip"}), timeout=1.0)
    gateway.shutdown()
    assert upstream.sizes == [BATCH, 200]
    assert gateway.rejected == {"batch refused with HTTP 503": BATCH + 200}
    assert gateway.accepted == 0
