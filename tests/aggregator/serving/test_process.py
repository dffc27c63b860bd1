"""The real server under process faults and concurrency: kill -9, SIGTERM, 2 workers."""

from __future__ import annotations

import http.client
import os
import signal
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np

from ldp_telemetry.aggregator.store.sqlite.backend import SqliteStore
from ldp_telemetry.shared import TaskConfig, encode_batch
from tests.support.reports import create_task, envelopes, estimates, payloads, post_reports
from tests.support.servers import Server

StartServer = Callable[..., Server]
WORDS = [f"w{i % 53}" for i in range(2000)]


def test_acknowledged_reports_survive_kill_9(server_factory: StartServer, tmp_path: Path) -> None:
    db = tmp_path / "durable.sqlite3"
    server = server_factory(db)
    task = create_task(server.url, task_id="durable", mechanism="rr", epsilon=1.0, min_batch_size=1)
    bodies = [
        encode_batch(
            task,
            envelopes(task, payloads(task, [True] * 150 + [False] * 50, np.random.default_rng(i))),
        )
        for i in range(5)
    ]
    for body in bodies:
        assert post_reports(server.url, "durable", body).json()["accepted"] == 200
    server.kill(signal.SIGKILL)  # right after the last 200, the whole process group

    restarted = server_factory(db)
    assert estimates(restarted.url, "durable").json()["n"] == 1000
    replay = post_reports(restarted.url, "durable", bodies[-1]).json()
    assert replay["accepted"] == 0 and len(replay["rejected"]) == 200


def test_sigterm_lets_an_in_flight_batch_commit(
    server_factory: StartServer, tmp_path: Path
) -> None:
    db = tmp_path / "graceful.sqlite3"
    server = server_factory(db)
    task = create_task(
        server.url, task_id="graceful", mechanism="rr", epsilon=1.0, min_batch_size=1
    )
    body = encode_batch(task, envelopes(task, [1] * 300))
    address = urlsplit(server.url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=30)
    connection.putrequest("POST", "/v1/tasks/graceful/reports")
    connection.putheader("Content-Type", "application/json")
    connection.putheader("Content-Length", str(len(body)))
    connection.endheaders(body[:100])
    wait_until_accepted(server, connection.sock.getsockname()[1])
    server.process.send_signal(signal.SIGTERM)
    time.sleep(0.2)
    connection.send(body[100:])
    response = connection.getresponse()
    assert response.status == 200 and b'"accepted":300' in response.read()
    assert server.process.wait(timeout=30) == 0
    assert estimates(server_factory(db).url, "graceful").json()["n"] == 300


def wait_until_accepted(server: Server, client_port: int, timeout: float = 20.0) -> None:
    """Wait until a process of the server holds the accepted end of our connection."""
    server_port = int(urlsplit(server.url).port or 0)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        inode = _server_socket_inode(server_port, client_port)
        if inode and f"socket:[{inode}]" in _group_sockets(server.process.pid):
            return
        time.sleep(0.02)
    raise AssertionError("the server did not accept the connection")


def _server_socket_inode(server_port: int, client_port: int) -> str | None:
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote, inode = fields[1], fields[2], fields[9]
        if (int(local.split(":")[1], 16), int(remote.split(":")[1], 16)) == (
            server_port,
            client_port,
        ) and inode != "0":
            return inode
    return None


def _group_sockets(group: int) -> set[str]:
    links = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.getpgid(int(pid)) == group:
                folder = f"/proc/{pid}/fd"
                links.update(os.readlink(f"{folder}/{fd}") for fd in os.listdir(folder))
        except OSError:  # the process ended meanwhile
            continue
    return links


def test_two_workers_and_four_threads_give_the_serial_sums(
    server_factory: StartServer, tmp_path: Path
) -> None:
    db = tmp_path / "concurrent.sqlite3"
    server = server_factory(db, workers=2)
    params = {"mechanism": "cms", "epsilon": 4.0, "k": 64, "m": 32, "hash_seed": 11}
    parallel = create_task(server.url, task_id="parallel", **params)
    serial = create_task(server.url, task_id="serial", **params)
    reports = payloads(parallel, WORDS, np.random.default_rng(9))

    def bodies(task: TaskConfig) -> list[bytes]:
        batch = envelopes(task, reports)
        return [encode_batch(task, batch[i : i + 100]) for i in range(0, len(batch), 100)]

    parallel_bodies = bodies(parallel)
    with ThreadPoolExecutor(max_workers=4) as pool:  # every batch twice, from two threads
        answers = list(
            pool.map(lambda b: post_reports(server.url, "parallel", b).json(), parallel_bodies * 2)
        )
    assert sum(a["accepted"] for a in answers) == len(reports)
    for body in bodies(serial):
        assert post_reports(server.url, "serial", body).json()["accepted"] == 100

    store = SqliteStore(str(db))
    tables = []
    for task in (parallel, serial):
        with store.read_sums(task, None, None) as sums:
            tables.append((sums.total, sums.table[0:64]))
    assert tables[0][0] == tables[1][0] == len(reports)
    assert np.array_equal(tables[0][1], tables[1][1])
