"""Disk and file faults, injected for real: the collector says so and loses nothing acked.

A full disk is a real tmpfs of 2 MiB (mounting needs root, as CI runs); a file that cannot
be written is the database and its WAL made immutable (``chattr +i``: even root cannot
write them; a read-only remount is refused while the files are open); a deleted or
replaced database is a real unlink/rename.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import requests
from flask import Flask
from flask.testing import FlaskClient

from ldp_telemetry.shared import TaskConfig, encode_batch
from tests.support.collectors import make_app
from tests.support.reports import create_task, envelopes, estimates, payloads, post_reports
from tests.support.servers import ADMIN, ANALYST, Server, bearer

pytestmark = pytest.mark.timeout(120)


@contextmanager
def small_disk(mount: Path, size: str) -> Iterator[Path]:
    """Mount a tmpfs of ``size`` (e.g. "2m") at ``mount``; unmount it afterwards."""
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.fail("mounting a tmpfs needs root (CI runs as root): run the suite as root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"cannot mount a tmpfs as root: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """Yield a 2 MiB tmpfs, unmounted afterwards."""
    with small_disk(tmp_path / "small-disk", "2m") as mount:
        yield mount


def in_process_collector(db: Path) -> tuple[Flask, FlaskClient]:
    """The collector's app in this process on ``db`` (a GiB of staging), and its test client."""
    app = make_app(str(db), STAGED_BYTES=1 << 30)
    return app, app.test_client()


def make_task(http: FlaskClient) -> TaskConfig:
    answer = http.post(
        "/v1/tasks",
        headers=bearer(ADMIN),
        json={
            "task_id": "words",
            "mechanism": "cms",
            "epsilon": 4,
            "k": 64,
            "m": 256,
            "min_batch_size": 1,
        },
    )
    assert answer.status_code == 201, answer.json
    return TaskConfig.from_dict(answer.json)


def upload(http: FlaskClient, task: TaskConfig, count: int, seed: int) -> tuple[int, dict]:
    reports = payloads(task, [f"w{i % 7}" for i in range(count)], np.random.default_rng(seed))
    body = encode_batch(task, envelopes(task, reports))
    answer = http.post(
        f"/v1/tasks/{task.task_id}/reports", data=body, content_type="application/json"
    )
    return answer.status_code, dict(answer.headers) | {"json": answer.json}


def counted(http: FlaskClient) -> int:
    answer = http.post(
        "/v1/tasks/words/estimates", headers=bearer(ANALYST), json={"candidates": ["w0"]}
    )
    assert answer.status_code == 200, answer.json
    return int(answer.json["n"])


def test_a_deleted_database_stops_ingest_instead_of_writing_into_the_void(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "c.sqlite3"
    _, http = in_process_collector(db)
    task = make_task(http)
    assert upload(http, task, 50, 1)[0] == 200
    db.unlink()
    status, answer = upload(http, task, 50, 2)
    assert status == 503 and answer["json"]["type"].endswith(":unavailable")
    assert int(answer["Retry-After"]) > 0 and "deleted or replaced" in caplog.text
    assert http.get("/readyz").status_code == 503


def test_a_database_moved_away_and_back_creates_no_file_and_ingest_resumes(
    tmp_path: Path,
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from ldp_telemetry.aggregator.store import StoreUnavailable
    from ldp_telemetry.aggregator.store.sqlite.backend import SqliteStore

    db = tmp_path / "c.sqlite3"
    store = SqliteStore(str(db))
    store.initialize()
    os.replace(db, tmp_path / "away")
    # a thread with no connection yet opens one now: refused, nothing created
    with ThreadPoolExecutor(1) as fresh, pytest.raises(StoreUnavailable):
        fresh.submit(store.list_tokens).result()
    assert not db.exists()  # no empty database was created in its place
    os.replace(tmp_path / "away", db)
    with ThreadPoolExecutor(1) as fresh:  # the right file is back: it reads and writes
        fresh.submit(store.add_token, "h" * 64, "admin").result()
    assert [t.role for t in store.list_tokens()] == ["admin"]


def test_a_replaced_database_stops_ingest(tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite3"
    _, http = in_process_collector(db)
    task = make_task(http)
    assert upload(http, task, 50, 1)[0] == 200
    shutil.copy(db, tmp_path / "copy")
    os.replace(tmp_path / "copy", db)  # same name, another file
    assert upload(http, task, 50, 2)[0] == 503
    assert http.get("/readyz").status_code == 503


def test_a_full_disk_answers_507_keeps_every_ack_and_recovers(tmpfs: Path) -> None:
    _, http = in_process_collector(tmpfs / "c.sqlite3")
    task = make_task(http)
    filler = tmpfs / "filler"
    free = shutil.disk_usage(tmpfs).free
    filler.write_bytes(b"\0" * max(0, free - (256 << 10)))  # leave 256 KiB
    acked, statuses = 0, []
    for seed in range(60):
        status, answer = upload(http, task, 200, seed)
        statuses.append(status)
        if status == 200:
            acked += answer["json"]["accepted"]
        else:
            assert status == 507, answer["json"]
            assert answer["json"]["type"].endswith(":insufficient_storage")
            assert int(answer["Retry-After"]) > 0
            break
    assert statuses[-1] == 507, "the disk never filled"
    filler.unlink()
    status, answer = upload(http, task, 200, 99)
    assert status == 200
    assert counted(http) == acked + answer["json"]["accepted"]  # every ack, nothing more


def test_an_unwritable_database_answers_503_and_readyz_turns_unready(tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite3"
    _, http = in_process_collector(db)
    task = make_task(http)
    assert upload(http, task, 50, 1)[0] == 200
    files = [str(db), f"{db}-wal"]
    if os.geteuid() != 0:
        pytest.skip("chattr +i needs root (CI runs as root)")
    locked = subprocess.run(["chattr", "+i", *files], capture_output=True, text=True, check=False)
    if locked.returncode != 0:
        pytest.fail(f"cannot make the database immutable: {locked.stderr.strip()}")
    try:
        status, answer = upload(http, task, 50, 2)
        assert status == 503 and answer["json"]["type"].endswith(":unavailable"), answer
        assert int(answer["Retry-After"]) > 0
        assert http.get("/readyz").status_code == 503
    finally:
        subprocess.run(["chattr", "-i", *files], check=True)
    assert upload(http, task, 50, 3)[0] == 200
    assert counted(http) == 100  # the refused batch left nothing behind


def _children(pid: int) -> set[int]:
    """Return the pids of a process's children (the server's workers)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def test_the_default_server_answers_a_full_disk_507_and_keeps_every_ack(
    tmp_path: Path, server_factory: Callable[..., Server]
) -> None:
    with small_disk(tmp_path / "disk", "8m") as disk:
        # metrics where serve puts them (off this disk); the log beside the test, not on it
        server = server_factory(str(disk / "c.sqlite3"), workers=2, own_metrics_dir=True)
        task = create_task(
            server.url, task_id="words", mechanism="cms", epsilon=4, k=64, m=256, min_batch_size=1
        )
        workers = _children(server.process.pid)
        filler = disk / "filler"
        filler.write_bytes(b"\0" * max(0, shutil.disk_usage(disk).free - (256 << 10)))
        rng = np.random.default_rng(4)
        acked, refused = 0, 0
        for _ in range(300):
            values = [f"w{i % 7}" for i in range(200)]
            body = encode_batch(task, envelopes(task, payloads(task, values, rng)))
            answer = post_reports(server.url, "words", body)  # a dropped connection raises
            if answer.status_code == 200:
                assert refused == 0, "a 200 after the disk was full"
                acked += answer.json()["accepted"]
                continue
            assert answer.status_code == 507, answer.text
            assert answer.json()["type"].endswith(":insufficient_storage")
            assert int(answer.headers["Retry-After"]) > 0
            refused += 1
            if refused == 20:
                break
        assert refused == 20, f"the disk never filled ({acked} reports acked)"
        assert requests.get(server.url + "/healthz", timeout=30).status_code == 200
        # both workers (a load balancer's probes reach either) say the node is not ready
        ready = [requests.get(server.url + "/readyz", timeout=30).status_code for _ in range(8)]
        assert set(ready) == {503}, ready
        assert server.process.poll() is None and _children(server.process.pid) == workers
        filler.unlink()
        deadline = time.monotonic() + 30
        while requests.get(server.url + "/readyz", timeout=30).status_code != 200:
            assert time.monotonic() < deadline, "never ready again after space was freed"
            time.sleep(0.2)
        answer = estimates(server.url, "words", candidates=["w0"])
        assert answer.status_code == 200 and answer.json()["n"] == acked  # each ack, once
        server.kill()
