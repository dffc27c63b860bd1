"""Group commit through the real server: concurrent uploads, kill -9 under load, and the
fast upload path answering exactly as the Flask view does."""

from __future__ import annotations

import gzip
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import requests

from ldp_telemetry.aggregator.core.config import DEFAULTS
from ldp_telemetry.aggregator.core.problems import problem_parts, too_large
from ldp_telemetry.shared import TaskConfig, encode_batch
from tests.support.reports import create_task, envelopes, estimates, payloads, post_reports
from tests.support.servers import ADMIN, Server, bearer
from tests.support.waiting import wait_until

StartServer = Callable[..., Server]
LOAD_SECONDS = 1.5  # s of uploads at least before the kill
LOADED = 60  # acknowledged uploads before the kill: the load really ran, however slow the machine
THREADS = 8
LIMIT = int(DEFAULTS["MAX_BODY_BYTES"])  # the servers' own: they run with the defaults
HUGE = b'{"reports": ["' + b"a" * (LIMIT + 1) + b'"]}'  # over the limit, as sent


def rr_bodies(task: TaskConfig, batches: int, size: int, seed: int) -> list[bytes]:
    rng = np.random.default_rng(seed)
    return [
        encode_batch(task, envelopes(task, payloads(task, [True] * size, rng)))
        for _ in range(batches)
    ]


def test_concurrent_uploads_sharing_ids_count_each_id_once(server_factory: StartServer) -> None:
    server = server_factory(workers=2)
    task = create_task(server.url, task_id="shared", mechanism="rr", epsilon=1.0, min_batch_size=1)
    reports = envelopes(task, payloads(task, [True] * 400, np.random.default_rng(1)))
    # 40 uploads of 20 reports from a pool of 400: every id is sent by two uploads at once
    bodies = [
        encode_batch(task, [reports[(i * 10 + j) % 400] for j in range(20)]) for i in range(40)
    ]
    with ThreadPoolExecutor(THREADS) as pool:
        answers = list(pool.map(lambda b: post_reports(server.url, "shared", b), bodies * 2))
    assert all(a.status_code == 200 for a in answers)
    accepted = sum(a.json()["accepted"] for a in answers)
    replayed = sum(len(a.json()["rejected"]) for a in answers)
    assert accepted == 400 and replayed == 80 * 20 - 400
    assert {r["reason"] for a in answers for r in a.json()["rejected"]} == {"report_replayed"}
    assert estimates(server.url, "shared").json()["n"] == 400


def test_kill_9_under_concurrent_load_loses_no_acknowledged_report(
    server_factory: StartServer, tmp_path: Path
) -> None:
    db = tmp_path / "load.sqlite3"
    server = server_factory(db, workers=2)
    task = create_task(server.url, task_id="load", mechanism="rr", epsilon=1.0, min_batch_size=1)
    acked: list[bytes] = []
    sent = 0
    stop = threading.Event()
    lock = threading.Lock()

    def uploader(seed: int) -> None:
        nonlocal sent
        session = requests.Session()
        for body in rr_bodies(task, 400, 5, seed):
            if stop.is_set():
                return
            try:
                answer = session.post(
                    f"{server.url}/v1/tasks/load/reports",
                    data=body,
                    headers={"Content-Type": "application/json"},
                    timeout=10,
                )
            except requests.RequestException:
                return  # the server is gone
            with lock:
                sent += 1
                if answer.status_code == 200:
                    assert answer.json()["accepted"] == 5
                    acked.append(body)

    threads = [threading.Thread(target=uploader, args=(seed,)) for seed in range(THREADS)]
    for thread in threads:
        thread.start()
    time.sleep(LOAD_SECONDS)
    # on a loaded machine (CI's second worker beside) 1.5 s may hold only a few uploads
    wait_until(lambda: len(acked) >= LOADED, f"{LOADED} uploads acknowledged")
    server.kill(signal.SIGKILL)  # the whole process group, uploads in flight
    stop.set()
    for thread in threads:
        thread.join(30)
    assert len(acked) >= LOADED

    restarted = server_factory(db, workers=2)
    n = estimates(restarted.url, "load").json()["n"]
    assert 5 * len(acked) <= n <= 5 * (sent + THREADS)
    with ThreadPoolExecutor(THREADS) as pool:
        again = list(pool.map(lambda b: post_reports(restarted.url, "load", b), acked))
    # every acknowledged report is in the store: resent, each one is a replay
    assert all(a.status_code == 200 and a.json()["accepted"] == 0 for a in again)
    assert estimates(restarted.url, "load").json()["n"] == n


@pytest.fixture(scope="module")
def two_doors(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The same collector served by granian (the fast path) and by gunicorn (Flask)."""
    from tests.support.servers import start_server

    folder = tmp_path_factory.mktemp("doors")
    servers = {
        "fast": start_server(folder / "fast.sqlite3", folder=folder),
        "flask": start_server(folder / "flask.sqlite3", server="gthread", folder=folder),
    }
    try:
        yield servers
    finally:
        for running in servers.values():
            running.kill()


def answers_of(two_doors: dict[str, Server], send: Callable[[str], requests.Response]) -> Any:
    found = {}
    for door, server in two_doors.items():
        response = send(server.url)
        found[door] = (
            response.status_code,
            response.headers.get("Content-Type"),
            response.headers.get("Retry-After"),
            response.headers.get("WWW-Authenticate"),
            response.content,
        )
    return found


def test_the_fast_path_answers_byte_for_byte_as_the_flask_view(
    two_doors: dict[str, Server],
) -> None:
    params = {"task_id": "doors", "mechanism": "rr", "epsilon": 1.0, "min_batch_size": 1}
    keyed = {**params, "task_id": "keyed", "upload_key_required": True}
    tasks = {}
    for server in two_doors.values():
        tasks["doors"] = create_task(server.url, **params)
        response = requests.post(
            f"{server.url}/v1/tasks", json=keyed, headers=bearer(ADMIN), timeout=30
        )
        assert response.status_code == 201
    task = tasks["doors"]
    rng = np.random.default_rng(5)
    good = encode_batch(task, envelopes(task, payloads(task, [True, False] * 5, rng)))
    old = encode_batch(task, envelopes(task, payloads(task, [True], rng), at=1e9))
    too_many = encode_batch(task, envelopes(task, payloads(task, [True] * 5001, rng)))
    json_type = {"Content-Type": "application/json"}
    cases: dict[str, Callable[[str], requests.Response]] = {
        "accepted": lambda url: post_reports(url, "doors", good),
        "replayed": lambda url: post_reports(url, "doors", good),
        "gzip": lambda url: post_reports(url, "doors", good, compress=True),
        "expired": lambda url: post_reports(url, "doors", old),
        "unknown task": lambda url: post_reports(url, "nope", good),
        "no upload key": lambda url: post_reports(url, "keyed", good),
        "wrong key": lambda url: post_reports(
            url, "keyed", good, headers={"Authorization": "Bearer wrong"}
        ),
        "not json": lambda url: post_reports(url, "doors", b"{not json"),
        "text/plain": lambda url: post_reports(
            url, "doors", good, headers={"Content-Type": "text/plain"}
        ),
        "bad gzip": lambda url: requests.post(
            f"{url}/v1/tasks/doors/reports",
            data=b"\x1f\x8b garbage",
            headers={**json_type, "Content-Encoding": "gzip"},
            timeout=30,
        ),
        "brotli": lambda url: requests.post(
            f"{url}/v1/tasks/doors/reports",
            data=good,
            headers={**json_type, "Content-Encoding": "br"},
            timeout=30,
        ),
        "not a batch": lambda url: post_reports(url, "doors", b'{"reports": 3}'),
        "too many": lambda url: post_reports(url, "doors", too_many),
        "gzip bomb": lambda url: requests.post(
            f"{url}/v1/tasks/doors/reports",
            data=gzip.compress(b" " * (5 << 20)),
            headers={**json_type, "Content-Encoding": "gzip"},
            timeout=30,
        ),
        **OVERSIZED,
    }
    found = {name: answers_of(two_doors, send) for name, send in cases.items()}
    for name, answers in found.items():
        assert answers["fast"] == answers["flask"], name
    # one 413 for a body over MAX_BODY_BYTES: however framed, whatever the route or door
    too_large_body = problem_parts(too_large(LIMIT))[2]
    for name in ["gzip bomb", *OVERSIZED]:
        assert found[name]["fast"][::4] == (413, too_large_body), name


def chunked(body: bytes) -> Iterator[bytes]:
    """Yield ``body`` in pieces: requests sends a generator with chunked framing."""
    yield from (body[i : i + (256 << 10)] for i in range(0, len(body), 256 << 10))


def post_huge(path: str, framing: Callable[[bytes], Any], **headers: str) -> Any:
    def send(url: str) -> requests.Response:
        headers.setdefault("Content-Type", "application/json")
        return requests.post(url + path, data=framing(HUGE), headers=headers, timeout=60)

    return send


# Refused before anything else is looked at (the task, its key, the media type), on the
# upload route of either door and on the Flask routes the fast path passes on.
OVERSIZED: dict[str, Callable[[str], requests.Response]] = {
    "declared too large": post_huge("/v1/tasks/doors/reports", bytes),
    "chunked too large": post_huge("/v1/tasks/doors/reports", chunked),
    "too large, unknown task": post_huge("/v1/tasks/nope/reports", bytes),
    "too large, chunked, no key": post_huge("/v1/tasks/keyed/reports", chunked),
    "too large, text/plain": post_huge(
        "/v1/tasks/doors/reports", bytes, **{"Content-Type": "text/plain"}
    ),
    "too large task": post_huge("/v1/tasks", bytes, Authorization=f"Bearer {ADMIN}"),
    "too large task, chunked": post_huge("/v1/tasks", chunked, Authorization=f"Bearer {ADMIN}"),
}


def test_a_store_fault_is_answered_alike_by_both_doors(two_doors: dict[str, Server]) -> None:
    params = {"task_id": "fault", "mechanism": "rr", "epsilon": 1.0, "min_batch_size": 1}
    for server in two_doors.values():
        task = create_task(server.url, **params)
    body = rr_bodies(task, 1, 5, seed=9)[0]
    files = [Path(server.db) for server in two_doors.values()]
    for db in files:  # the file gone from under the store: it refuses to write (503)
        os.replace(db, db.with_suffix(".moved"))
    try:
        found = answers_of(two_doors, lambda url: post_reports(url, "fault", body))
    finally:
        for db in files:
            os.replace(db.with_suffix(".moved"), db)
    assert found["fast"] == found["flask"]
    assert found["fast"][:3] == (503, "application/problem+json", "10")
    again = answers_of(two_doors, lambda url: post_reports(url, "fault", body))
    assert again["fast"] == again["flask"] and again["fast"][0] == 200  # back: nothing was lost
