"""The Flask view and the RSGI fast path answer an upload with the same bytes, in process:
a store fault and a bug injected into the store, and bodies over the limit however framed
(the real servers' parity test, tests/aggregator/store/test_group_commit_http.py, cannot
inject a bug)."""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from flask import Flask, request

from ldp_telemetry.aggregator import create_app
from ldp_telemetry.aggregator.api.resources import INTAKE
from ldp_telemetry.aggregator.core.problems import problem_parts, too_large
from ldp_telemetry.aggregator.serving.rsgi_bridge import RsgiBridge
from ldp_telemetry.aggregator.store import StoreFull, StoreUnavailable
from ldp_telemetry.shared import TaskConfig, encode_batch
from tests.support.reports import envelopes, payloads
from tests.support.servers import ADMIN, bearer

LIMIT = 3000  # bytes: MAX_BODY_BYTES of these apps, small so that bodies pass it cheaply
Answer = tuple[int, str | None, str | None, bytes]


@dataclass
class Scope:
    """What the bridge reads of granian's RSGI scope."""

    path: str
    headers: dict[str, str]
    method: str = "POST"
    proto: str = "http"
    query_string: str = ""
    server: str = "127.0.0.1:8000"
    scheme: str = "http"
    http_version: str = "1.1"


@dataclass
class Protocol:
    """granian's RSGI protocol: the body in one read or in chunks, the answer kept."""

    body: bytes
    answer: tuple[int, list[tuple[str, str]], bytes] | None = field(default=None)

    async def __call__(self) -> bytes:
        return self.body

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for start in range(0, len(self.body), 1000):
            yield self.body[start : start + 1000]

    def response_bytes(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.answer = (status, headers, body)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Flask]:
    app = create_app(
        {
            "TESTING": True,
            "DATABASE": str(tmp_path / "parity.sqlite3"),
            "ADMIN_TOKEN": ADMIN,
            "MAX_BODY_BYTES": LIMIT,
        }
    )
    yield app
    app.extensions[INTAKE].committer.close()


@pytest.fixture
def task(app: Flask) -> TaskConfig:
    created = app.test_client().post(
        "/v1/tasks",
        headers=bearer(ADMIN),
        json={"task_id": "t", "mechanism": "rr", "epsilon": 1.0, "min_batch_size": 1},
    )
    assert created.status_code == 201, created.json
    return TaskConfig.from_dict(created.json)


def fast(app: Flask, path: str, body: bytes, headers: dict[str, str], chunked: bool) -> Answer:
    """Answer a request through the RSGI bridge (its fast path for uploads)."""
    bridge = RsgiBridge(app, LIMIT, threads=0, intake=app.extensions[INTAKE])
    sent = {name.lower(): value for name, value in headers.items()}
    if not chunked:
        sent["content-length"] = str(len(body))
    protocol = Protocol(body)
    asyncio.run(bridge.__rsgi__(Scope(path, sent), protocol))
    assert protocol.answer is not None
    status, answer_headers, payload = protocol.answer
    named = {name.lower(): value for name, value in answer_headers}
    return status, named.get("content-type"), named.get("retry-after"), payload


def flask(app: Flask, path: str, body: bytes, headers: dict[str, str]) -> Answer:
    """Answer a request through the Flask app (the view gunicorn and the test client run)."""
    response = app.test_client().post(path, data=body, headers=headers)
    return (
        response.status_code,
        response.headers.get("Content-Type"),
        response.headers.get("Retry-After"),
        response.get_data(),
    )


def batch(task: TaskConfig, seed: int) -> bytes:
    return encode_batch(
        task, envelopes(task, payloads(task, [True] * 3, np.random.default_rng(seed)))
    )


FAULTS = {
    "locked": (StoreUnavailable("database is locked"), 503, "1"),
    "unwritable": (StoreUnavailable("the database file was replaced"), 503, "10"),
    "disk full": (StoreFull("the disk holding the database is full"), 507, "60"),
    "a bug": (RuntimeError("boom"), 500, None),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_fault_in_the_commit_gets_the_same_answer_from_both_doors(
    app: Flask, task: TaskConfig, fault: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    error, status, retry_after = FAULTS[fault]

    def add_uploads(uploads: Any) -> Any:
        raise error

    monkeypatch.setattr(app.extensions["ldp_store"], "add_uploads", add_uploads)
    headers = {"Content-Type": "application/json"}
    body = batch(task, seed=1)
    through_flask = flask(app, "/v1/tasks/t/reports", body, headers)
    assert fast(app, "/v1/tasks/t/reports", body, headers, chunked=False) == through_flask
    assert fast(app, "/v1/tasks/t/reports", body, headers, chunked=True) == through_flask
    assert through_flask[:3] == (status, "application/problem+json", retry_after)
    monkeypatch.undo()  # the store back: nothing of the refused upload was stored
    accepted = flask(app, "/v1/tasks/t/reports", body, headers)
    assert accepted[0] == 200 and accepted[3].startswith(b'{"accepted":3,')


OVER = b'{"reports": ["' + b"a" * LIMIT + b'"]}'
SIZES = {
    "declared": (OVER, {}, False),
    "chunked": (OVER, {}, True),
    "gzip-expanded": (gzip.compress(OVER), {"Content-Encoding": "gzip"}, False),
    "gzip-expanded, chunked": (gzip.compress(OVER), {"Content-Encoding": "gzip"}, True),
}


@pytest.mark.parametrize("framing", sorted(SIZES))
@pytest.mark.parametrize("path", ["/v1/tasks/t/reports", "/v1/tasks/nope/reports", "/v1/tasks"])
def test_a_body_over_the_limit_gets_one_413_however_framed(
    app: Flask, task: TaskConfig, framing: str, path: str
) -> None:
    body, extra, chunked = SIZES[framing]
    headers = {"Content-Type": "application/json", **bearer(ADMIN), **extra}
    answer = fast(app, path, body, headers, chunked)
    if not chunked:  # the test client declares every body's length
        assert flask(app, path, body, headers) == answer
    if "gzip" in framing and "nope" in path:  # found over the limit only once inflated,
        assert answer[0] == 404  # after the task was looked up
    else:  # a body over the limit as sent is refused before anything else
        assert answer == (413, "application/problem+json", None, problem_parts(too_large(LIMIT))[2])


@pytest.mark.parametrize("chunked", [False, True])
def test_werkzeugs_own_413_is_answered_with_the_same_document(app: Flask, chunked: bool) -> None:
    # A view reading the body through werkzeug (request.get_data) meets Flask's
    # MAX_CONTENT_LENGTH; the app's handler answers with the core's document. (The
    # dashboard's HTML pages keep their own error page: they answer browsers.)
    app.add_url_rule("/probe", "probe", lambda: request.get_data(), methods=["POST"])
    body = b"a" * (LIMIT + 1)
    answer = fast(app, "/probe", body, {}, chunked)
    assert answer == (413, "application/problem+json", None, problem_parts(too_large(LIMIT))[2])
    if not chunked:
        assert flask(app, "/probe", body, {}) == answer
