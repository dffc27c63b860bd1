"""The bridge's pool threads (analysts' queries, the dashboard, admin) yield the CPU to uploads:
they run at ``APP_NICENESS`` above the worker's loop and group-commit writer (Linux)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import requests

from ldp_telemetry.aggregator import serving
from ldp_telemetry.aggregator.serving.rsgi_bridge import RsgiBridge, yield_to_uploads
from tests.support.processes import group_members
from tests.support.reports import create_task
from tests.support.servers import ANALYST, bearer, start_server


def lowered(nice: int) -> int:
    return min(nice + serving.APP_NICENESS, 19)  # 19: the lowest there is


def own_priority() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def test_a_pool_thread_runs_below_the_thread_that_made_it() -> None:
    seen: list[int] = []

    def run() -> None:
        yield_to_uploads()
        seen.append(own_priority())

    mine = own_priority()
    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert seen == [lowered(mine)]
    assert own_priority() == mine  # the caller's own thread is left as it was


def test_the_bridges_pool_threads_are_lowered_and_nothing_else() -> None:
    bridge = RsgiBridge(lambda environ, start: [b""], max_body=1000, threads=2)
    try:
        assert bridge.pool is not None
        assert bridge.pool.submit(own_priority).result() == lowered(own_priority())
    finally:
        assert bridge.pool is not None
        bridge.pool.shutdown()


def nice_values(pid: int) -> list[int]:
    """The nice value of each thread of a process (field 19 of /proc/<pid>/task/<tid>/stat)."""
    values = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        values.append(int(stat.rsplit(")", 1)[1].split()[16]))
    return values


def test_a_served_workers_query_threads_run_below_its_upload_threads(tmp_path: Path) -> None:
    server = start_server(tmp_path / "db.sqlite3")
    try:
        create_task(server.url, task_id="nice", mechanism="rr", epsilon=1.0, min_batch_size=1)
        answer = requests.get(f"{server.url}/v1/tasks", headers=bearer(ANALYST), timeout=30)
        assert answer.status_code == 200  # a query: it ran on the worker's pool
        workers = [pid for pid in group_members(server.process.pid) if pid != server.process.pid]
        assert workers
        base = os.getpriority(os.PRIO_PROCESS, server.process.pid)
        for worker in workers:
            values = nice_values(worker)
            assert base in values  # the loop, the writer: as the process
            assert lowered(base) in values  # the pool thread that answered
            assert set(values) <= {base, lowered(base)}
    finally:
        server.kill()
