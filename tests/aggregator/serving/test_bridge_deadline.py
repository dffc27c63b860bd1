"""The RSGI bridge's body deadline: a body that does not come in time is answered 408.

granian's reads are futures: the bridge cancels the read itself when the deadline passes
(not the task awaiting it), so a late body is answered 408 whether it was announced by
Content-Length (one read) or came chunked (a read per chunk), and counted once.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from ldp_telemetry.aggregator.serving import rsgi_bridge
from ldp_telemetry.aggregator.serving.rsgi_bridge import RsgiBridge


@dataclass
class Scope:
    """What the bridge reads of granian's RSGI scope (the app's environ included)."""

    path: str = "/anything"
    headers: dict[str, str] = field(default_factory=dict)
    method: str = "POST"
    proto: str = "http"
    query_string: str = ""
    server: str = "127.0.0.1:8000"
    scheme: str = "http"
    http_version: str = "1.1"


class Stalled:
    """A protocol whose body stops after ``chunks`` (reads are futures, as granian's).

    As granian's stream, an empty chunk ends it: the next ``__anext__`` raises
    StopAsyncIteration. Without one, the read after the last chunk never completes.
    """

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = list(chunks)
        self.ended = False
        self.pending: list[asyncio.Future[bytes]] = []
        self.answer: tuple[int, list[tuple[str, str]], bytes] | None = None

    def _read(self) -> asyncio.Future[bytes]:
        future = asyncio.get_running_loop().create_future()
        if self.chunks:
            future.set_result(self.chunks.pop(0))
        self.pending.append(future)
        return future

    def __call__(self) -> asyncio.Future[bytes]:
        return self._read()

    def __aiter__(self) -> Stalled:
        return self

    def __anext__(self) -> asyncio.Future[bytes]:
        if self.ended:
            raise StopAsyncIteration
        self.ended = self.chunks == [b""]
        return self._read()

    def response_bytes(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.answer = (status, headers, body)


def never_called(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    raise AssertionError("a request without its body reached the app")


@pytest.mark.parametrize(
    ("headers", "chunks"),
    [({"content-length": "10"}, []), ({}, [b"12345"])],
    ids=["content-length", "chunked"],
)
def test_a_late_body_is_answered_408_and_its_read_cancelled(
    monkeypatch: pytest.MonkeyPatch, headers: dict[str, str], chunks: list[bytes]
) -> None:
    monkeypatch.setattr(rsgi_bridge, "BODY_TIMEOUT", 0.05)
    bridge = RsgiBridge(never_called, max_body=1000, threads=0)
    before = bridge.aborted["body_timeout"]._value.get()
    protocol = Stalled(chunks)
    asyncio.run(asyncio.wait_for(bridge.__rsgi__(Scope(headers=headers), protocol), 5))
    assert protocol.answer is not None
    status, _, body = protocol.answer
    assert (status, json.loads(body)["status"]) == (408, 408)
    assert protocol.pending[-1].cancelled()  # the read itself was given up
    assert bridge.aborted["body_timeout"]._value.get() == before + 1
    assert bridge.waiting == 0


def test_a_body_in_time_is_read_whole_and_its_timer_dropped() -> None:
    seen: list[bytes] = []

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        seen.append(environ["wsgi.input"].read())
        start_response("200 OK", [("content-type", "text/plain")])
        return [b"ok"]

    async def serve() -> int:
        bridge = RsgiBridge(app, max_body=1000, threads=0)
        protocol = Stalled([b"abc", b"def", b""])
        await bridge.__rsgi__(Scope(headers={}), protocol)
        assert protocol.answer is not None
        # every timer the bridge started is cancelled: none is left to fire
        return sum(1 for h in asyncio.get_running_loop()._scheduled if not h.cancelled())

    assert asyncio.run(serve()) == 0
    assert seen == [b"abcdef"]
