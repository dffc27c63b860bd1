"""Task configurations: fetched by the uploader thread only, cached (in memory and beside
the queue), revalidated with the ETag, refused when invalid.

``refresh_due`` is what the uploader thread calls; these tests call it in its place."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ldp_telemetry.client import InMemoryTransport, Request, Response
from ldp_telemetry.client.log_once import LogOnce
from ldp_telemetry.client.stats import Counters
from ldp_telemetry.client.tasks import DEFAULT_MAX_AGE, RETRY_FAILED, TaskRegistry
from ldp_telemetry.shared import TaskConfig

pytestmark = pytest.mark.timeout(30)


class Clock:
    """A settable monotonic clock."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def registry(transport: object, clock: Clock, **options: object) -> TaskRegistry:
    return TaskRegistry(
        transport,
        timeout=1.0,
        log=LogOnce(),
        clock=clock,
        **options,
    )


def fetched(known: TaskRegistry, task_id: str) -> TaskConfig | None:
    """Ask for a task as record does, let the uploader fetch it, ask again."""
    if known.get(task_id) is None:
        known.refresh_due()
    return known.get(task_id)


def test_get_never_fetches_it_wants_and_wakes_the_uploader(tasks: dict[str, TaskConfig]) -> None:
    transport, woken = InMemoryTransport(tasks.values()), []
    known = registry(transport, Clock(), wake=lambda: woken.append(1))
    assert known.get("t-cms") is None and known.get("t-cms") is None
    assert transport.requests == [] and woken == [1]  # wanted once, nothing sent
    known.refresh_due()
    assert known.get("t-cms") == tasks["cms"] and len(transport.requests) == 1


def test_configurations_are_kept_beside_the_queue(
    tasks: dict[str, TaskConfig], tmp_path: Path
) -> None:
    transport = InMemoryTransport(tasks.values())
    assert fetched(registry(transport, Clock(), cache_dir=tmp_path), "t-grr") == tasks["grr"]
    assert (tmp_path / "tasks.json").stat().st_mode & 0o777 == 0o600
    offline = Answers(Response(503, {}, b""))
    again = registry(offline, Clock(), cache_dir=tmp_path)
    assert again.get("t-grr") == tasks["grr"] and offline.calls == 0  # known at once
    (tmp_path / "tasks.json").write_text('{"tasks": {"t-grr": {"config": {"task_id": 1}}}}')
    assert registry(offline, Clock(), cache_dir=tmp_path).get("t-grr") is None  # refused


def test_revalidation_sends_the_etag_and_keeps_the_task_on_304(
    tasks: dict[str, TaskConfig],
) -> None:
    transport, clock = InMemoryTransport(tasks.values()), Clock()
    known = registry(transport, clock)
    assert fetched(known, "t-cms") == tasks["cms"]
    known.refresh_due()  # still fresh: nothing sent
    assert len(transport.requests) == 1 and "If-None-Match" not in transport.requests[0].headers
    clock.now += DEFAULT_MAX_AGE + 1
    known.refresh_due()
    assert transport.requests[1].headers["If-None-Match"] == f'"{tasks["cms"].fingerprint}"'
    assert known.get("t-cms") == tasks["cms"] and len(transport.requests) == 2


def test_an_outdated_task_is_fetched_again(tasks: dict[str, TaskConfig]) -> None:
    transport, clock = InMemoryTransport(tasks.values()), Clock()
    known = registry(transport, clock)
    assert fetched(known, "t-cms") == tasks["cms"]
    newer = TaskConfig.create(task_id="t-cms", mechanism="cms", epsilon=2.0, k=8, m=32)
    transport.add_task(newer)
    known.invalidate("t-cms")
    known.refresh_due()
    assert known.get("t-cms") == newer


def test_a_failed_fetch_is_retried_later_in_the_background(tasks: dict[str, TaskConfig]) -> None:
    transport, clock = InMemoryTransport(), Clock()
    known = registry(transport, clock)
    assert fetched(known, "t-rr") is None and fetched(known, "t-rr") is None
    assert len(transport.requests) == 1  # tried once, then not before RETRY_FAILED
    transport.add_task(tasks["rr"])
    clock.now += RETRY_FAILED + 1
    known.refresh_due()
    assert known.get("t-rr") == tasks["rr"]


class Answers:
    """A transport answering GETs with a fixed response."""

    def __init__(self, response: Response) -> None:
        self.response = response
        self.calls = 0

    def handle(self, request: Request, *, timeout: float) -> Response:
        self.calls += 1
        return self.response

    def close(self) -> None:
        pass


_RR = TaskConfig(task_id="t-rr", mechanism="rr", epsilon=1.0).to_dict()
_EXTRA = [("k", 4), ("upload_key", "secret"), ("min_batch_size", 100.0)]


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[]",
        b'{"task_id": "t-rr"}',
        json.dumps({**TaskConfig(task_id="other", mechanism="rr", epsilon=1.0).to_dict()}).encode(),
        json.dumps(
            {
                **TaskConfig(task_id="t-rr", mechanism="rr", epsilon=1.0).to_dict(),
                "fingerprint": "0" * 32,
            }
        ).encode(),
        # PROTOCOL.md §1.1: protocol and derived always served; no other kind's field (k on
        # rr), no creation answer's upload_key, no 4.0 where an integer goes.
        *(
            json.dumps({k: v for k, v in _RR.items() if k != name}).encode()
            for name in ("derived", "protocol")
        ),
        *(json.dumps({**_RR, name: value}).encode() for name, value in _EXTRA),
    ],
)
def test_an_invalid_answer_is_refused(body: bytes) -> None:
    known = registry(Answers(Response(200, {"ETag": '"x"'}, body)), Clock())
    assert fetched(known, "t-rr") is None


def test_the_well_formed_answer_the_invalid_ones_are_made_from_is_accepted() -> None:
    known = registry(Answers(Response(200, {"ETag": '"x"'}, json.dumps(_RR).encode())), Clock())
    task = fetched(known, "t-rr")
    assert task is not None and task.fingerprint == _RR["fingerprint"]


def test_a_task_whose_published_integers_disagree_is_refused_and_counted() -> None:
    """The SDK recomputes every derived integer; one that differs refuses the task."""
    task = TaskConfig(task_id="t-rr", mechanism="rr", epsilon=1.0).to_dict()
    lie = {**task, "derived": {"T_yes": task["derived"]["T_yes"], "T_no": 1 << 31}}
    counters = Counters()
    known = registry(
        Answers(Response(200, {}, json.dumps(lie).encode())), Clock(), counters=counters
    )
    assert fetched(known, "t-rr") is None
    other = TaskConfig(task_id="t-x", mechanism="rr", epsilon=1.0).to_dict()
    refused = registry(
        Answers(Response(200, {}, json.dumps(other).encode())), Clock(), counters=counters
    )
    assert fetched(refused, "t-rr") is None  # another task's answer: invalid
    assert counters.snapshot(0).refused_tasks == {"derived_mismatch": 1, "invalid": 1}


def test_a_valid_answer_with_mixed_case_headers(tasks: dict[str, TaskConfig]) -> None:
    body = json.dumps(tasks["rr"].to_dict()).encode()
    clock = Clock()
    answers = Answers(Response(200, {"Cache-Control": "public, Max-Age=5"}, body))
    known = registry(answers, clock)
    assert fetched(known, "t-rr") == tasks["rr"]
    clock.now += 4
    known.refresh_due()
    assert answers.calls == 1
    clock.now += 2
    known.refresh_due()  # due after max-age = 5 s
    assert answers.calls == 2 and known.get("t-rr") == tasks["rr"]


@pytest.mark.parametrize("task_id", ["abc\n", "", "-abc", "a" * 65, "a/b"])
def test_an_invalid_task_id_is_refused_without_a_fetch(
    tasks: dict[str, TaskConfig], task_id: str
) -> None:
    body = json.dumps(tasks["rr"].to_dict()).encode()
    answers = Answers(Response(200, {}, body))
    assert fetched(registry(answers, Clock()), task_id) is None
    assert answers.calls == 0


class ByPath:
    """A transport serving each task JSON object at its own path."""

    def __init__(self, *served: dict[str, object]) -> None:
        self.served = {f"/v1/tasks/{task['task_id']}": task for task in served}

    def handle(self, request: Request, *, timeout: float) -> Response:
        found = self.served.get(request.path)
        return Response(200, {}, json.dumps(found).encode()) if found else Response(404)

    def close(self) -> None:
        pass


def test_a_task_of_a_protocol_not_implemented_is_refused_alone() -> None:
    """PROTOCOL.md (1.1): one task this SDK cannot serve never locks out the others."""
    future = {**TaskConfig(task_id="t-future", mechanism="rr", epsilon=1.0).to_dict()}
    future["protocol"] = "1.9"
    mislabelled = {**TaskConfig(task_id="t-mis", mechanism="rr", epsilon=1.0).to_dict()}
    mislabelled["protocol"] = "1.1"  # 1.1 is exactly the tasks with dimensions
    ok = TaskConfig(task_id="t-ok", mechanism="rr", epsilon=1.0)
    counters = Counters()
    known = registry(ByPath(future, mislabelled, ok.to_dict()), Clock(), counters=counters)
    assert fetched(known, "t-future") is None and fetched(known, "t-mis") is None
    assert fetched(known, "t-ok") == ok
    assert counters.snapshot(0).refused_tasks == {"invalid": 2}
