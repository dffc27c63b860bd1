"""Run a WSGI app under granian with the limits of :mod:`ldp_telemetry.aggregator.serving`.

``python -m ldp_telemetry.aggregator.serving.granian_conf --host H --port P --workers N module:app``
is what ``ldp-aggregator serve`` (default server) executes. SIGTERM or SIGINT stop accepting
connections and let every in-flight request finish (its upload commits and is answered) before the
workers exit; a worker still busy after ``GRACEFUL_SECONDS`` is killed. A worker whose server
process dies (kill -9) stops the same way on its own, within the same bound (``_orphan_guard``).

A worker that dies is respawned; when respawned workers keep dying (granian then stops,
"Worker crash loop detected"), the server is started again after ``RESTART_SECONDS``, for
as long as the fault lasts: only a signal ends it.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import shutil
import signal
import sys
import threading
import time
from typing import Any

from granian.constants import HTTPModes, Interfaces
from granian.http import HTTP1Settings
from granian.log import LogLevels
from granian.server import MPServer

from ldp_telemetry.aggregator import serving
from ldp_telemetry.aggregator.serving import rsgi_bridge


def build(target: str, host: str, port: int, workers: int, wsgi: bool) -> MPServer:
    """Return the granian server (one process per worker: this Python has a GIL) for
    ``target``, with every client-facing limit explicit.

    ``wsgi``: granian's own WSGI interface, whose app threads read the body (a dribbled body holds
    one); otherwise the app runs behind :mod:`ldp_telemetry.aggregator.serving.rsgi_bridge`.
    """
    return MPServer(
        target,
        address=host,
        port=port,
        interface=Interfaces.WSGI if wsgi else Interfaces.RSGI,
        workers=workers,
        blocking_threads=serving.THREADS if wsgi else 1,  # RSGI: 1 (the bridge runs the app)
        backpressure=serving.BACKPRESSURE,
        backlog=serving.BACKLOG,
        http=HTTPModes.http1,  # devices speak HTTP/1.1; no HTTP/2 stream multiplexing to abuse
        websockets=False,
        # header_read_timeout also closes a kept-alive connection idle that long
        http1_settings=HTTP1Settings(
            header_read_timeout=serving.HEADER_TIMEOUT_MS, keep_alive=True
        ),
        # no access log: its lines start with the client's address, which is never written
        log_access=False,
        log_level=LogLevels.warning,
        respawn_failed_workers=True,
        workers_kill_timeout=serving.GRACEFUL_SECONDS,
    )


RESTART_SECONDS = 5.0  # after a crash loop: long enough not to spin, short enough to serve
PR_SET_PDEATHSIG = 1  # linux/prctl.h
_SERVER_PID = "LDP_GRANIAN_SERVER_PID"


def _orphan_guard() -> None:
    """Have this worker sent SIGTERM (a graceful stop) when the server process dies, and
    ended by the kernel if that stop has not ended it within ``GRACEFUL_SECONDS``.

    granian's workers do not watch their parent: after ``kill -9`` of the server alone they
    kept serving on their own, holding the port and the metrics folder's lock (measured).
    Called once the app is loaded, just before the worker serves: a server that died while
    the app was being imported (about a second) leaves a worker that has served nothing, so
    it exits at once. (It used to SIGTERM itself there, before loading: that signal came
    before the worker's serve loop and was lost in about 1 of 10 runs, the worker living on.)
    """
    _deadline_while_served(serving.GRACEFUL_SECONDS)
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM))
    if str(os.getppid()) != os.environ.get(_SERVER_PID):  # it died before prctl took effect
        os._exit(0)


def _deadline_while_served(seconds: int) -> None:
    """Keep a SIGALRM ``seconds`` ahead while the server process lives: once it is gone the
    alarm is no longer pushed back, and its default action ends this worker.

    The server kills a worker still busy ``GRACEFUL_SECONDS`` after its SIGTERM
    (``workers_kill_timeout``); an orphan has no one to do it. Its stop can wait for ever: for
    a request that never returns (granian's stop waits for every request under way, the
    bridge's for its pool threads), or wedged with every thread waiting on a lock (2 of 7 CI
    rehearsals: a worker alive 45 s after its server's kill -9, its six threads in futex
    waits; reproduced in about 1 of 100 kills: the main thread blocked inside granian's
    SIGTERM handler, WorkerSignal.set, holding the GIL). So the bound is one the kernel keeps,
    armed before the server can die, needing neither the loop nor the GIL. While the server
    lives, a worker whose GIL no other thread gets for ``seconds`` on end is ended too (and the
    server starts another in its place).
    """
    if not hasattr(signal, "alarm"):  # Windows: no alarm (and no prctl)
        return
    server = os.environ.get(_SERVER_PID)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)  # the default action: end the process
    signal.alarm(seconds)  # armed now: the server may die before the thread first runs

    def push_back() -> None:
        while str(os.getppid()) == server:
            signal.alarm(seconds)
            time.sleep(1.0)

    threading.Thread(target=push_back, name="ldp-orphan-deadline", daemon=True).start()


def _sigterm_ends_until_served() -> None:
    """Let SIGTERM end this worker at once until granian installs the worker's own handler
    (its graceful stop), just before the worker serves: until then it has served nothing.

    The handler a worker inherits from the server process only sets a flag of the server's
    copy: a SIGTERM then, from the server's stop or from ``_orphan_guard``'s prctl, was lost
    and the worker served on (a worker sent SIGTERM while it loaded the app: measured). What
    comes later, until the loop runs, ``_stop_if_orphaned`` catches.
    """
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _load_bridged(target: str) -> rsgi_bridge.RsgiBridge:
    _sigterm_ends_until_served()
    app = rsgi_bridge.load(target)
    _orphan_guard()
    app.serving = _stop_if_orphaned
    return app


def _stop_if_orphaned() -> None:
    """End this worker at once if the server process died before the worker's loop ran.

    The prctl's SIGTERM may have come after granian installed its handler but before uvloop
    ran the loop: uvloop then only records the signal (its wakeup fd is set as the loop
    starts) and acts on it at the next signal (uvloop's Loop.__sighandler, _read_from_self).
    Not by a second SIGTERM: granian's handler (WorkerSignal.set) can block holding the GIL,
    every thread of the worker then waiting until the alarm (seen after about 1 in 100 kills
    of the server, with or without a second SIGTERM). The loop has only just started: the
    worker has answered nothing.
    """
    if str(os.getppid()) != os.environ.get(_SERVER_PID):
        os._exit(0)


def _load_wsgi(target: str) -> Any:
    _sigterm_ends_until_served()
    app = rsgi_bridge.import_app(target)
    _orphan_guard()
    return app


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m ldp_telemetry.aggregator.serving.granian_conf")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument(
        "--wsgi", action="store_true", help="granian's WSGI interface instead of the RSGI bridge"
    )
    parser.add_argument("target")
    args = parser.parse_args(argv)
    os.environ[_SERVER_PID] = str(os.getpid())  # inherited by the workers
    try:
        while True:
            server = build(args.target, args.host, args.port, args.workers, args.wsgi)
            with contextlib.suppress(SystemExit):  # granian exits 1 after a crash loop
                _serve(server, args.wsgi)
            if not _restart_after(server):
                break
    finally:
        # Remove the metrics folder if `serve` created it for this run (after kill -9 the
        # next `serve` removes it: ldp_telemetry.aggregator.core.metrics.claim_run_dir).
        owned = os.environ.get("LDP_OWNED_METRICS_DIR")
        if owned and owned == os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            shutil.rmtree(owned, ignore_errors=True)


def _serve(server: MPServer, wsgi: bool) -> None:
    if wsgi:
        server.serve(target_loader=_load_wsgi)
    else:
        # an RSGI app is an object with __rsgi__, not the callable granian annotates
        server.serve(target_loader=_load_bridged)  # type: ignore[arg-type]


def _restart_after(server: MPServer) -> bool:
    """Wait ``RESTART_SECONDS`` after granian stopped on its own; False if a signal stopped it.

    granian's handlers stay installed after it returns: a SIGTERM meanwhile sets the same
    flag, so the wait ends at once.
    """
    deadline = time.monotonic() + RESTART_SECONDS
    while not server.interrupt_signal and time.monotonic() < deadline:
        time.sleep(0.1)
    if server.interrupt_signal:
        return False
    print(
        f"ldp-aggregator: the workers kept dying; serving again after {RESTART_SECONDS:.0f} s",
        file=sys.stderr,
        flush=True,
    )
    return True


if __name__ == "__main__":
    main()
