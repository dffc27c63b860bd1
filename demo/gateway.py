"""An ingestion gateway: many devices' small uploads, forwarded to the collector in batches.

Each simulated device is its own :class:`client.Client` (its own secret, budget and memo),
as on real phones. Opening one HTTP request per device would measure the demo machine, not
the system, so the devices' SDKs upload through this in-process gateway instead: it
acknowledges each device's upload once it holds it, and forwards reports 500 at a time to
the collector over real HTTP with the SDK's own :class:`client.HTTPTransport`, keeping the
collector's verdicts. An ingestion relay in front of a collector does the same (and is
also where a deployment strips IP addresses).
"""

from __future__ import annotations

import gzip
import json
import threading
from collections import Counter, defaultdict

from ldp_telemetry.client import HTTPTransport, Request, Response

BATCH = 500
_JSON = {"content-type": "application/json"}


class Gateway:
    """A client Transport that batches report uploads per task and forwards them."""

    def __init__(self, collector_url: str) -> None:
        self._upstream = HTTPTransport(collector_url)
        self._lock = threading.Lock()
        self._pending: dict[str, list[dict]] = defaultdict(list)
        self.accepted = 0
        self.rejected: Counter[str] = Counter()

    def handle(self, request: Request, *, timeout: float) -> Response:
        """Hold a device's batch (forwarding full batches); refuse anything else."""
        parts = request.path.strip("/").split("/")
        if request.method != "POST" or len(parts) != 4 or parts[3] != "reports":
            return Response(404, _JSON, b'{"title": "the gateway only takes uploads"}')
        body = request.body or b""
        if (request.header("Content-Encoding") or "").lower() == "gzip":
            body = gzip.decompress(body)
        reports = json.loads(body)["reports"]
        with self._lock:
            self._pending[parts[2]].extend(reports)
            if len(self._pending[parts[2]]) >= BATCH:
                self._forward(parts[2], timeout)
        answer = json.dumps({"accepted": len(reports), "rejected": []}).encode()
        return Response(200, _JSON, answer)

    def drain(self, timeout: float = 60.0) -> None:
        """Forward everything still held."""
        with self._lock:
            for task_id in list(self._pending):
                self._forward(task_id, timeout)

    def close(self) -> None:
        """Keep the upstream open: the gateway outlives each device's client."""

    def shutdown(self) -> None:
        """Close the upstream connection pool."""
        self._upstream.close()

    def _forward(self, task_id: str, timeout: float) -> None:
        reports, self._pending[task_id] = self._pending[task_id], []
        for start in range(0, len(reports), BATCH):
            chunk = reports[start : start + BATCH]
            body = json.dumps({"reports": chunk}).encode()
            answer = self._upstream.handle(
                Request("POST", f"/v1/tasks/{task_id}/reports", _JSON, body), timeout=timeout
            )
            if answer.status != 200:  # counted, shown by the demo, never silent
                self.rejected[f"batch refused with HTTP {answer.status}"] += len(chunk)
                continue
            verdict = json.loads(answer.body)
            self.accepted += verdict["accepted"]
            self.rejected.update(item["reason"] for item in verdict["rejected"])
