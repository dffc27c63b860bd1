"""The default server under slow clients, and its metrics folder after kill -9."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest
import requests

from ldp_telemetry.aggregator.core.metrics import ROOT_CANDIDATES, metrics_root
from ldp_telemetry.shared import encode_batch
from tests.support.processes import group_members, python_stacks
from tests.support.reports import create_task, envelopes, payloads, post_reports
from tests.support.servers import Server

StartServer = Callable[..., Server]
IDLE = DRIBBLE_HEADERS = DRIBBLE_BODIES = 50
PROMPT = 2.0  # s: an upload answered later than this counts as held up
HOLD = 8.0  # s of attack while uploads are timed: longer than the header deadline (5 s)


@contextmanager
def slow_clients(url: str, idle: int, headers: int, bodies: int) -> Iterator[list[int]]:
    """Hold idle connections and connections dribbling one byte a second (headers, or a
    body after complete headers) open against ``url``, reopening any the server closes.
    Yields a one-element list counting the connections opened."""
    address = urlsplit(url)
    target = (address.hostname or "127.0.0.1", address.port or 80)
    body_head = (
        b"POST /v1/tasks/slow/reports HTTP/1.1\r\nHost: x\r\nContent-Type: "
        b"application/json\r\nContent-Length: 100000\r\n\r\n{"
    )
    kinds = ["idle"] * idle + ["headers"] * headers + ["body"] * bodies
    sockets: list[socket.socket | None] = [None] * len(kinds)
    opened = [0]
    stop = threading.Event()

    def connect(index: int) -> None:
        connection = socket.create_connection(target, timeout=5)
        connection.setblocking(False)
        if kinds[index] == "body":
            connection.sendall(body_head)
        elif kinds[index] == "headers":
            connection.send(b"P")
        sockets[index] = connection
        opened[0] += 1

    def dribble() -> None:
        while not stop.wait(1.0):
            for index, connection in enumerate(sockets):
                if connection is None:
                    continue
                try:
                    if connection.recv(4096) == b"":  # closed (or answered) by the server
                        raise ConnectionResetError
                except BlockingIOError:
                    pass  # still open, nothing to read: the normal case
                except OSError:
                    connection.close()
                    connect(index)  # an attacker reconnects at once
                    continue
                if kinds[index] != "idle":
                    with suppress(OSError):
                        connection.send(b"a")

    for index in range(len(kinds)):
        connect(index)
    thread = threading.Thread(target=dribble, daemon=True)
    thread.start()
    try:
        yield opened
    finally:
        stop.set()
        thread.join(timeout=10)
        for connection in sockets:
            if connection is not None:
                connection.close()


def test_slow_and_idle_clients_never_delay_an_upload(
    server_factory: StartServer, tmp_path: Path
) -> None:
    server = server_factory(tmp_path / "slow.sqlite3", workers=2)
    task = create_task(server.url, task_id="slow", mechanism="rr", epsilon=1.0, min_batch_size=1)
    rng = np.random.default_rng(5)
    latencies, statuses = [], []
    with slow_clients(server.url, IDLE, DRIBBLE_HEADERS, DRIBBLE_BODIES) as opened:
        time.sleep(1.5)  # every slow connection is open and has dribbled
        deadline = time.monotonic() + HOLD
        while time.monotonic() < deadline:
            body = encode_batch(task, envelopes(task, payloads(task, [True], rng)))
            started = time.monotonic()
            statuses.append(post_reports(server.url, "slow", body).status_code)
            latencies.append(time.monotonic() - started)
            time.sleep(0.1)
    assert statuses and set(statuses) == {200}
    assert max(latencies) < PROMPT, f"slowest upload {max(latencies):.2f} s"
    # The header deadline closed the idle and header-dribbling connections (reopened)
    assert opened[0] > IDLE + DRIBBLE_HEADERS + DRIBBLE_BODIES


def test_no_metrics_folder_outlives_its_server(server_factory: StartServer, tmp_path: Path) -> None:
    db = tmp_path / "metrics.sqlite3"
    runs = metrics_root(tmp_path)  # shared with other servers of this machine: ours by pid
    killed = server_factory(db, workers=2, own_metrics_dir=True)
    first = _run_folders(runs, killed)
    assert len(first) == 1 and any(first[0].glob("*.db"))  # the workers write their samples
    # kill -9 of the server process alone: no exit hook runs, and its workers must not
    # live on as orphans (they would keep the port and the folder's lock)
    os.kill(killed.process.pid, signal.SIGKILL)
    killed.process.wait(timeout=30)
    gone = _group_gone(killed.process.pid, timeout=45.0)  # > GRACEFUL_SECONDS (30 s)
    if not gone:
        # what each orphan was doing (2 of 7 CI rehearsals saw one wedged: test_orphans)
        seen = [_described(pid) for pid in group_members(killed.process.pid)]
        os.killpg(killed.process.pid, signal.SIGKILL)  # the orphans, before failing
        raise AssertionError("workers outlived their server:\n" + "\n".join(seen))
    assert first[0].is_dir()  # left behind ...

    restarted = server_factory(db, workers=1, own_metrics_dir=True)
    second = _run_folders(runs, restarted)
    assert len(second) == 1 and not first[0].exists()  # ... until the next serve removes it
    restarted.kill(signal.SIGTERM)  # a clean exit removes its own folder at once
    assert not second[0].exists()


def test_the_metrics_folder_is_off_the_databases_file_system(tmp_path: Path) -> None:
    # A full disk under the database must not reach the workers' memory-mapped metrics
    # files (SIGBUS); the benchmark machine and CI have /dev/shm or a separate /tmp.
    root = metrics_root(tmp_path)
    if root.parent == tmp_path:
        pytest.fail(f"no candidate folder off {tmp_path}'s file system: {ROOT_CANDIDATES}")
    assert root.parent.stat().st_dev != tmp_path.stat().st_dev


def test_an_orphan_is_described_with_its_python_stacks() -> None:
    # what the failure message of the test above shows of each orphan (py-spy is in the dev
    # extra: without it the message says so, and this test fails)
    code = "import time\ndef waiting_here():\n print(flush=True)\n time.sleep(60)\nwaiting_here()"
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        assert process.stdout is not None and process.stdout.readline() == b"\n"
        described = _described(process.pid)
    finally:
        process.kill()
        process.wait()
    assert described.startswith(f"{process.pid} {sys.executable} -c ")
    assert f"{process.pid}:" in described and "waiting_here (<string>:4)" in described


def _run_folders(root: Path, server: Server) -> list[Path]:
    return sorted(root.glob(f"run-{server.process.pid}-*"))


def _group_gone(group: int, timeout: float) -> bool:
    """Return True once no process of the group runs (:func:`group_members`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not group_members(group):
            return True
        time.sleep(0.1)
    return False


def _described(pid: int) -> str:
    """A process's command line; per thread (by id) its name, state and kernel wait channel;
    and its Python threads' stacks (py-spy, whose thread ids are the same)."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        threads = []
        for task in sorted(Path(f"/proc/{pid}/task").iterdir(), key=lambda task: int(task.name)):
            name = (task / "comm").read_text().strip()
            state = (task / "stat").read_text().rsplit(")", 1)[1].split()[0]
            threads.append(f"{task.name}:{name}:{state}:{(task / 'wchan').read_text() or '-'}")
    except OSError as error:
        return f"{pid}: {error}"
    return f"{pid} {command.strip()} | {' '.join(threads)}\n{python_stacks(pid)}"


def test_bodies_over_the_limit_are_refused_however_framed(
    server_factory: StartServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LDP_MAX_BODY_BYTES", "5000")
    server = server_factory(tmp_path / "limit.sqlite3")
    task = create_task(server.url, task_id="limit", mechanism="rr", epsilon=1.0, min_batch_size=1)
    rng = np.random.default_rng(8)
    small = encode_batch(task, envelopes(task, payloads(task, [True] * 5, rng)))
    large = encode_batch(task, envelopes(task, payloads(task, [True] * 200, rng)))
    assert len(small) < 5000 < len(large)
    url = f"{server.url}/v1/tasks/limit/reports"
    headers = {"Content-Type": "application/json"}

    def chunked(body: bytes) -> Iterator[bytes]:  # requests sends a generator chunked
        yield from (body[i : i + 1000] for i in range(0, len(body), 1000))

    assert requests.post(url, data=large, headers=headers, timeout=30).status_code == 413
    assert requests.post(url, data=chunked(large), headers=headers, timeout=30).status_code == 413
    answer = requests.post(url, data=chunked(small), headers=headers, timeout=30)
    assert answer.status_code == 200 and answer.json()["accepted"] == 5


def test_an_empty_metrics_folder_variable_writes_no_file_where_it_runs(tmp_path: Path) -> None:
    # prometheus_client takes an empty PROMETHEUS_MULTIPROC_DIR as "multiprocess, in the
    # working directory" and would leave histogram_<pid>.db files wherever serve starts.
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": ""}
    code = "import ldp_telemetry.aggregator.core.metrics as m; m.GROUP_UPLOADS.observe(1)"
    subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, check=True, timeout=60)
    assert list(tmp_path.iterdir()) == []
