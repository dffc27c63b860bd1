"""Several collector nodes on one PostgreSQL database, as behind a load balancer.

Real ``ldp-aggregator serve`` processes on a real PostgreSQL server: uploads spread over
the nodes count exactly once, whichever node a replay reaches; a node killed during load
loses nothing it acknowledged; a PostgreSQL restart answers 503 + Retry-After and the SDK
delivers everything afterwards; and the sums equal, bit for bit, those of one SQLite
collector fed the same reports.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from ldp_telemetry.aggregator.store.postgres.backend import PostgresStore
from ldp_telemetry.aggregator.store.sqlite.backend import SqliteStore
from ldp_telemetry.client import Client, RetryPolicy
from ldp_telemetry.shared import TaskConfig, encode_batch
from tests.support.postgres import PostgresServer
from tests.support.reports import create_task, envelopes, estimates, payloads, post_reports
from tests.support.servers import Server

pytestmark = pytest.mark.timeout(240)
WORDS = [f"w{i % 23}" for i in range(4000)]
CANDIDATES = ["w0", "w1", "w22", "never"]


def cms_task(url: str, task_id: str, **fixed: int) -> TaskConfig:
    return create_task(
        url, task_id=task_id, mechanism="cms", epsilon=3.0, k=64, m=64, min_batch_size=1, **fixed
    )


def stored_rows(store: PostgresStore | SqliteStore, task: TaskConfig) -> list[tuple]:
    return [(b, s, r, n, c.tobytes()) for b, s, r, n, c in store.sum_rows(task)]


def test_nodes_share_tasks_and_count_every_report_once(
    postgres: PostgresServer,
    server_factory: Callable[..., Server],
    tmp_path: Path,
) -> None:
    url = postgres.new_database()
    first, second = server_factory(url), server_factory(url)
    single = server_factory(tmp_path / "single.sqlite3")
    task = cms_task(first.url, "spread")
    same = cms_task(single.url, "spread", hash_seed=task.to_dict()["hash_seed"])
    assert same.fingerprint == task.fingerprint
    batch = envelopes(task, payloads(task, WORDS, np.random.default_rng(4)))
    bodies = [encode_batch(task, batch[i : i + 100]) for i in range(0, len(batch), 100)]

    # Every batch goes to both nodes at once (and once to the single collector): whichever
    # node commits first takes the reports, the other answers them as replays.
    def send(node: Server, body: bytes, out: list[int]) -> None:
        response = post_reports(node.url, "spread", body)
        assert response.status_code == 200, response.text
        out.append(response.json()["accepted"])

    accepted: list[int] = []
    for body in bodies:
        threads = [
            threading.Thread(target=send, args=(node, body, accepted)) for node in (first, second)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert post_reports(single.url, "spread", body).json()["accepted"] == 100
    assert sum(accepted) == len(WORDS)  # each report accepted by exactly one node

    one, two = (
        estimates(first.url, "spread", candidates=CANDIDATES).json(),
        estimates(second.url, "spread", candidates=CANDIDATES).json(),
    )
    assert one["n"] == two["n"] == len(WORDS)
    assert one == two == estimates(single.url, "spread", candidates=CANDIDATES).json()
    with_postgres = PostgresStore(url)
    try:
        shared_rows = stored_rows(with_postgres, task)
    finally:
        with_postgres.close()
    assert shared_rows == stored_rows(SqliteStore(str(tmp_path / "single.sqlite3")), task)


def test_a_node_killed_during_load_loses_nothing_it_acknowledged(
    postgres: PostgresServer, server_factory: Callable[..., Server]
) -> None:
    url = postgres.new_database()
    doomed, survivor = server_factory(url), server_factory(url)
    task = cms_task(survivor.url, "kill")
    batch = envelopes(task, payloads(task, WORDS, np.random.default_rng(5)))
    bodies = [encode_batch(task, batch[i : i + 10]) for i in range(0, len(batch), 10)]
    acknowledged = 0
    lock = threading.Lock()

    def feed(node: Server, part: list[bytes]) -> None:
        nonlocal acknowledged
        for body in part:
            try:
                response = post_reports(node.url, "kill", body)
            except OSError:  # the node is gone: this upload was never acknowledged
                continue
            if response.status_code == 200:
                with lock:
                    acknowledged += response.json()["accepted"]

    threads = [
        threading.Thread(target=feed, args=(doomed, bodies[0::2])),
        threading.Thread(target=feed, args=(survivor, bodies[1::2])),
    ]
    for thread in threads:
        thread.start()
    time.sleep(0.3)
    doomed.kill()  # SIGKILL to the node's whole process group, mid-load
    for thread in threads:
        thread.join(timeout=120)
    answer = estimates(survivor.url, "kill", candidates=CANDIDATES)
    assert answer.status_code == 200, answer.text
    counted = answer.json()["n"]
    assert acknowledged <= counted <= len(WORDS)
    # The clients resend everything to the survivor: only what was never committed counts.
    resent = sum(post_reports(survivor.url, "kill", b).json()["accepted"] for b in bodies)
    assert counted + resent == len(WORDS) and resent > 0  # the kill came mid-load
    assert estimates(survivor.url, "kill", candidates=CANDIDATES).json()["n"] == len(WORDS)


@pytest.fixture
def own_postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL server of this test alone: it is restarted."""
    server = PostgresServer()
    yield server
    server.stop()


def test_a_postgres_restart_is_a_retryable_503_and_the_sdk_loses_nothing(
    own_postgres: PostgresServer, server_factory: Callable[..., Server], tmp_path: Path
) -> None:
    url = own_postgres.new_database()
    node = server_factory(url)
    task = cms_task(node.url, "restart")
    client = Client(
        node.url,
        tasks=[task],
        data_dir=tmp_path / "device",
        reports_per_period=None,
        flush_interval=0.2,
        retry=RetryPolicy(max_retries=20, backoff=0.2, backoff_max=2.0, deadline=120.0),
    )
    try:
        for i in range(20):  # distinct values: the SDK memoizes one report per value
            assert client.record("restart", f"before-{i}")
        assert client.flush(timeout=30)
        own_postgres.pause()
        down = payloads(task, ["x"], np.random.default_rng(0))
        answer = post_reports(node.url, "restart", encode_batch(task, envelopes(task, down)))
        assert answer.status_code == 503 and int(answer.headers["Retry-After"]) > 0
        assert answer.headers["Content-Type"].startswith("application/problem+json")
        for i in range(30):  # recorded while the database is down
            assert client.record("restart", f"during-{i}")
        time.sleep(2)
        own_postgres.resume()
        assert client.flush(timeout=90)
    finally:
        client.close(timeout=10)
    assert estimates(node.url, "restart", candidates=CANDIDATES).json()["n"] == 50
