"""Count forked children that find the on-disk queue unusable.

Run: ``.venv/bin/python -m benchmarks.client.fork_gate [--forks 200] [--no-gate]``.
One thread of the parent claims and releases batches and checkpoints without pause (what the
uploader thread does); the main thread forks ``--forks`` children, each records one report
and claims a batch on the same storage, as a forked app process would. Prints how many
children hung (killed after 5 s) and how many failed (``database is locked``); a child whose
first record waited past ``BUSY_TIMEOUT_MS`` for the parent's writes tries once more (a file
locked for good fails again) and counts as "ok at the second try".
``--no-gate`` forks without waiting for the SQLite calls in flight (``fork_gate.MAX_WAIT = 0``),
as the SDK did before the gate.
"""

from __future__ import annotations

import argparse
import functools
import os
import signal
import sqlite3
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from ldp_telemetry.client import fork_gate
from ldp_telemetry.client.privacy_ledger import Charge, Limits
from ldp_telemetry.client.sqlite_storage import SqliteStorage
from ldp_telemetry.client.storage import Pending, Slot

MIB = 1 << 20
FREE = Charge(0.0, 0, None)


def child(storage: SqliteStorage, n: int) -> None:
    """Record one report and claim a batch; exit 0, 4 (after a second try) or 3 (failed)."""
    code = 3
    try:
        slot = Slot("t", 0, 1, (100_000 + n).to_bytes(4, "big"))
        made = Pending("t", f"child-{n}", "x")
        try:
            storage.admit(slot, FREE, Limits(10**6), lambda: made)
            code = 0
        except sqlite3.OperationalError:  # busy past BUSY_TIMEOUT_MS: the thread writes non-stop
            storage.admit(slot, FREE, Limits(10**6), lambda: made)  # locked for good: fails again
            code = 4
        storage.release(p.report_id for p in storage.claim(5, MIB, 60))
    except Exception:
        code = 3
    finally:
        os._exit(code)


def wait(pid: int, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(status)
            return {0: "ok", 4: "ok at the second try"}.get(code, "failed")
        time.sleep(0.005)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return "hung"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--forks", type=int, default=200)
    parser.add_argument("--no-gate", action="store_true")
    args = parser.parse_args()
    if args.no_gate:  # the fork waits for no SQLite call in flight
        fork_gate.MAX_WAIT = 0.0
    storage = SqliteStorage(Path(tempfile.mkdtemp()), max_queue=10**6, max_bytes=1 << 30)
    for i in range(50):
        slot = Slot("t", 0, 1, i.to_bytes(4, "big"))
        storage.admit(
            slot, FREE, Limits(10**6), functools.partial(Pending, "t", f"id-{i}", "x" * 300)
        )
    stop = threading.Event()

    def churn() -> None:
        while not stop.is_set():
            try:
                storage.release(p.report_id for p in storage.claim(10, MIB, 60))
                storage.maintain()
            except Exception:  # a hung child may hold the file: the parent goes on
                time.sleep(0.01)

    threading.Thread(target=churn, daemon=True).start()
    outcomes: Counter[str] = Counter()
    for n in range(args.forks):
        pid = os.fork()
        if pid == 0:
            child(storage, n)
        outcomes[wait(pid, 5.0)] += 1
    stop.set()
    gate = "without the gate" if args.no_gate else "with the gate"
    print(f"{args.forks} forks {gate}: {dict(outcomes)}")


if __name__ == "__main__":
    main()
