"""A worker whose server process was killed (kill -9) exits within the server's drain time,
whatever its graceful stop waits for; a SIGTERM before it serves ends it at once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import IO

import requests

from tests.support.processes import group_members
from tests.support.servers import free_port

DRAIN = 2  # s: the worker's GRACEFUL_SECONDS, lowered by the app below to keep the test short
HANGING_APP = f"""
import os
import pathlib
import threading

from ldp_telemetry.aggregator import serving

serving.GRACEFUL_SECONDS = {DRAIN}  # read in the worker once the app is loaded


def hang(environ, start_response):
    if environ["PATH_INFO"] == "/hang":  # e.g. a query stuck on a lock: it never returns
        pathlib.Path(os.environ["HANG_FLAG"]).touch()
        threading.Event().wait()
    start_response("200 OK", [("content-type", "text/plain")])
    return [b"ok"]


app = serving.Served(hang, max_body=1000, threads=1)
"""


def test_an_orphan_exits_though_a_request_never_ends(tmp_path: Path) -> None:
    # The server kills a worker still busy GRACEFUL_SECONDS after its SIGTERM; once the
    # server is gone the worker must keep that bound itself, without its loop or the GIL
    # (CI saw a worker wedged in granian's SIGTERM handler, holding the GIL: not reproducible
    # on demand; a request that never ends is).
    flag = tmp_path / "hanging"
    port = free_port()
    log = tmp_path / "granian.log"
    with open(log, "wb") as output:
        server = _serve(tmp_path, "hanging_app", HANGING_APP, output, port, HANG_FLAG=str(flag))
    try:
        _wait_for(lambda: _answers(f"http://127.0.0.1:{port}/"), log)
        threading.Thread(
            target=_answers, args=(f"http://127.0.0.1:{port}/hang",), daemon=True
        ).start()
        _wait_for(flag.exists, log)
        os.kill(server.pid, signal.SIGKILL)
        server.wait(timeout=30)
        killed = time.monotonic()
        while group_members(server.pid) and time.monotonic() < killed + DRAIN + 20:
            time.sleep(0.1)
        assert not group_members(server.pid), "the orphaned worker outlived its drain time"
    finally:
        with suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=30)


SLOW_APP = """
import os
import pathlib
import time

pathlib.Path(os.environ["LOADING_FLAG"]).touch()
time.sleep(5)  # a slow import, e.g. a large store opened


def app(environ, start_response):
    start_response("200 OK", [("content-type", "text/plain")])
    return [b"ok"]
"""


def test_a_sigterm_while_the_app_loads_ends_the_worker(tmp_path: Path) -> None:
    # The same loss as a dead server's SIGTERM (prctl) before the worker's loop runs: the
    # handler a worker inherits from the server process would swallow it
    flag = tmp_path / "loading"
    log = tmp_path / "granian.log"
    with open(log, "wb") as output:
        server = _serve(tmp_path, "slow_app", SLOW_APP, output, LOADING_FLAG=str(flag))
    try:
        _wait_for(flag.exists, log)
        (worker,) = set(group_members(server.pid)) - {server.pid}
        os.kill(worker, signal.SIGTERM)
        sent = time.monotonic()
        while worker in group_members(server.pid) and time.monotonic() < sent + 3:
            time.sleep(0.05)
        assert worker not in group_members(server.pid), "the SIGTERM was lost"
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=30)


EARLY_KILL_APP = """
import os
import signal
import threading
import time

from ldp_telemetry.aggregator import serving

serving.GRACEFUL_SECONDS = 20  # the alarm's bound: longer than the test waits


def kill_the_server_before_the_loop_runs():
    while signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:  # until granian's handler
        time.sleep(0.0002)
    os.kill(os.getppid(), signal.SIGKILL)
    sum(range(30_000_000))  # holds the GIL (no bytecode runs): the loop does not start yet


threading.Thread(target=kill_the_server_before_the_loop_runs, daemon=True).start()


def ok(environ, start_response):
    start_response("200 OK", [("content-type", "text/plain")])
    return [b"ok"]


app = serving.Served(ok, max_body=1000, threads=1)
"""


def test_a_server_killed_before_its_worker_runs_its_loop_stops_the_worker(tmp_path: Path) -> None:
    # uvloop acts on a signal that came before its loop ran only at the next signal: the
    # prctl's SIGTERM was lost in 5 of 8 such runs before the bridge's loop-start check (the
    # worker lived on until the alarm). Three runs: a stray pass without the check is rare.
    for _ in range(3):
        server = _serve(tmp_path, "early_kill_app", EARLY_KILL_APP, subprocess.DEVNULL)
        try:
            server.wait(timeout=60)  # killed by its worker's thread
            killed = time.monotonic()
            while group_members(server.pid) and time.monotonic() < killed + 5:
                time.sleep(0.05)
            assert not group_members(server.pid), "the worker missed its server's death"
        finally:
            with suppress(ProcessLookupError):
                os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=30)


def _serve(
    tmp_path: Path, name: str, source: str, output: IO[bytes] | int, port: int = 0, **env: str
) -> subprocess.Popen[bytes]:
    """Start ``granian_conf`` (one worker, its own process group) on the app ``source``, saved
    as ``name``.py in ``tmp_path``, with ``env`` added to the environment (port 0: a free one)."""
    (tmp_path / f"{name}.py").write_text(source)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ldp_telemetry.aggregator.serving.granian_conf",
            "--port",
            str(port or free_port()),
            f"{name}:app",
        ],
        env={**os.environ, "PYTHONPATH": str(tmp_path), **env},
        stdout=output,
        stderr=output,
        start_new_session=True,
    )


def _answers(url: str) -> bool:
    with suppress(requests.RequestException):
        return requests.get(url, timeout=60).text == "ok"
    return False


def _wait_for(condition: Callable[[], bool], log: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, log.read_text()[-2000:]
        time.sleep(0.2)
