"""Per-slice central epsilon through a real shuffler: each row of a breakdown gets the
accountant's epsilon at its own slices' smallest count in a batch, not at the batch's size."""

from __future__ import annotations

import signal
import time
from dataclasses import replace
from pathlib import Path

import pytest
import requests

from ldp_telemetry.shared import TaskConfig, encode_batch
from ldp_telemetry.shared.codec import Envelope, new_report_id
from ldp_telemetry.shared.shuffling.accountant import central_epsilon
from ldp_telemetry.shared.shuffling.amplification import reduction_of
from tests.shuffler.processes import health, shuffler_token, start_shuffler, wait_for
from tests.support.reports import create_task
from tests.support.servers import ANALYST, Server, bearer

pytestmark = pytest.mark.timeout(180)
PLATFORM = {"name": "platform", "values": ["android", "ios"]}  # slices 0, 1 and other = 2
UPLOADS = {0: 70, 1: 60, 2: 10}  # one report per upload: each slice's distinct uploads
DELTA = 1e-8


def test_each_rows_central_epsilon_is_the_accountants_at_its_slices_own_count(
    collector_process: Server, tmp_path: Path
) -> None:
    task = create_task(
        collector_process.url, task_id="sliced", mechanism="rr", epsilon=2.0,
        min_batch_size=1, dimensions=[PLATFORM],
    )  # fmt: skip
    token = shuffler_token(Path(str(collector_process.db)))
    shuffler = start_shuffler(collector_process.url, token, tmp_path / "spool.sqlite3", 140)
    try:
        for index, uploads in UPLOADS.items():
            for _ in range(uploads):
                answer = requests.post(
                    f"{shuffler.url}/v1/tasks/sliced/reports",
                    data=encode_batch(task, [report(task, index)]),
                    headers={"Content-Type": "application/json"},
                    timeout=30,
                )
                assert answer.status_code == 202, answer.text
        wait_for(lambda: health(shuffler).get("accepted", 0) == 140, 60)
    finally:
        shuffler.kill(signal.SIGKILL)

    def ask(**query: object) -> dict:
        answer = requests.post(
            f"{collector_process.url}/v1/tasks/sliced/estimates",
            json=query,
            headers=bearer(ANALYST),
            timeout=60,
        )
        assert answer.status_code == 200, answer.text
        return answer.json()

    def accountant(n: int) -> float:
        return central_epsilon(reduction_of(task.mechanism_object), n, DELTA)

    body = ask(group_by=["platform"])
    rows = {tuple(row["dimensions"].values()): row for row in body["slices"]}
    # other (10 uploads) is thin: it joins android, the largest row, whose weakest slice it is.
    assert [r["dimensions"] for r in rows[("android",)]["rolled_up"]] == [{"platform": "other"}]
    assert rows[("android",)]["smallest_batch"] == 10
    assert rows[("android",)]["central_epsilon"] == accountant(10)
    assert rows[("ios",)]["smallest_batch"] == 60
    assert rows[("ios",)]["central_epsilon"] == accountant(60)
    # The totals: the weakest slice's, never the batch's 140.
    assert body["smallest_batch"] == 10 and body["central_epsilon"] == accountant(10)
    assert accountant(140) < accountant(60) < accountant(10) <= task.effective_epsilon
    (ios,) = ask(where={"platform": "ios"})["slices"]
    assert ios["central_epsilon"] == accountant(60) and ios["delta"] == DELTA


def report(task: TaskConfig, slice_index: int) -> Envelope:
    bucket = task.floor_time(time.time())
    return replace(Envelope(new_report_id(), task.fingerprint, bucket, True), slice=slice_index)
