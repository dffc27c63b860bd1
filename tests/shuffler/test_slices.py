"""Slices through the shuffler: it counts each slice's distinct uploads in a batch from the
clear ``dims``, and the collector records them with the batch (the n of each slice's
central epsilon), returned with the window."""

from __future__ import annotations

import json
import signal
import sqlite3
import time
from dataclasses import replace
from pathlib import Path

import pytest
import requests

from ldp_telemetry.aggregator.store.sqlite.backend import SqliteStore
from ldp_telemetry.shared import TaskConfig, encode_batch
from ldp_telemetry.shared.codec import Envelope, new_report_id
from ldp_telemetry.shared.wire import b64encode
from ldp_telemetry.shuffler.spool import Report, Spool
from tests.shuffler.processes import health, shuffler_token, start_shuffler, wait_for
from tests.support.reports import create_task
from tests.support.servers import Server, bearer

pytestmark = pytest.mark.timeout(120)
PLATFORM = {"name": "platform", "values": ["android", "ios"]}  # slices 0, 1 and other = 2
# Per upload, the slices of its reports: upload 0 sends two android reports (one upload).
UPLOADS = [[0, 0, 1], [0, 2], [1], [1, 1], [2], [0]]


def test_each_slices_distinct_uploads_are_recorded_with_the_batch(
    collector_process: Server, tmp_path: Path
) -> None:
    db = Path(str(collector_process.db))
    task = create_task(
        collector_process.url, task_id="sliced", mechanism="rr", epsilon=2.0,
        min_batch_size=1, dimensions=[PLATFORM],
    )  # fmt: skip
    token = shuffler_token(db)
    shuffler = start_shuffler(collector_process.url, token, tmp_path / "spool.sqlite3", 6)
    try:
        for slices in UPLOADS:
            body = encode_batch(task, [report(task, s) for s in slices])
            answer = requests.post(
                f"{shuffler.url}/v1/tasks/sliced/reports",
                data=body,
                headers={"Content-Type": "application/json"},
                timeout=30,
            )
            assert answer.status_code == 202, answer.text
        wait_for(lambda: health(shuffler).get("accepted", 0) == 10, 60)
    finally:
        shuffler.kill(signal.SIGKILL)
    with sqlite3.connect(db) as conn:
        rows = list(conn.execute("SELECT size, reports, slice_counts FROM shuffled_batches"))
    assert [(s, r, json.loads(c)) for s, r, c in rows] == [(6, 10, {"0": 3, "1": 3, "2": 2})]
    store = SqliteStore(str(db))
    window = store.shuffled_window(task, None, None)
    assert window.slice_counts == ({0: 3, 1: 3, 2: 2},)
    assert window.slice_smallest() == {0: 3, 1: 3, 2: 2}
    assert store.slice_counts(task, None, None) == {0: 4, 1: 4, 2: 2}  # reports, not uploads
    bad = requests.put(
        f"{collector_process.url}/v1/tasks/sliced/shuffled/{'A' * 22}?uploads=2&slice_counts=3:1",
        data=encode_batch(task, [report(task, 0)]),
        headers={**bearer(token), "Content-Type": "application/json"},
        timeout=30,
    )
    assert bad.status_code == 400 and "index below 3" in bad.json()["detail"]


def report(task: TaskConfig, slice_index: int) -> Envelope:
    bucket = task.floor_time(time.time())
    return replace(Envelope(new_report_id(), task.fingerprint, bucket, True), slice=slice_index)


def test_a_spool_from_before_slices_gains_the_column_and_counts_them(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as conn:  # batches as a spool before slices made it
        conn.execute(
            "CREATE TABLE batches (id INTEGER PRIMARY KEY, batch_id BLOB NOT NULL, "
            "task_id TEXT NOT NULL, time INTEGER NOT NULL, uploads INTEGER NOT NULL, "
            "members TEXT NOT NULL, state TEXT NOT NULL DEFAULT 'open')"
        )
    spool = Spool(str(path), capacity=100)
    for upload, dims in enumerate([{"p": "a"}, {"p": "a"}, {"p": "b"}, None]):
        fields = {"report_id": b64encode(bytes([upload]) * 16), "time": 100}
        body = json.dumps({**fields, **({"dims": dims} if dims else {})}).encode()
        spool.add([Report(bytes([upload]) * 16, "t", 100, 1100, body)])
    batch = spool.claim("t", 100, batch_min=4, batch_max=10)
    assert (batch.uploads, batch.slice_uploads) == (4, {'{"p":"a"}': 2, '{"p":"b"}': 1})
    assert Spool(str(path), capacity=100).open_batches()[0].slice_uploads == batch.slice_uploads
