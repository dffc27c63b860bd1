"""The report archive: export --reports as partitioned Parquet, re-summed by the Dask job.

On both stores: an archiving task keeps exactly the reports it accepted (replays are not
archived twice); the Dask job's sums equal the collector's bit for bit; estimates and
heavy hitters read from the sums file equal those read from the database.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from flask import Flask

from ldp_telemetry.aggregator.api.resources import get_store
from ldp_telemetry.aggregator.archive.parquet import archive_files, task_of
from ldp_telemetry.aggregator.archive.resum import run as run_batch
from ldp_telemetry.aggregator.cli import main
from ldp_telemetry.shared import Envelope, TaskConfig, new_report_id

DAY = 86_400
pytestmark = pytest.mark.timeout(180)


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def seed(app: Flask, params: dict[str, object], values: dict[int, list[str]]) -> TaskConfig:
    """Create an archiving task and add each bucket's reports (and a replay of the first)."""
    db = str(app.config["DATABASE"])
    args = [f"--{k.replace('_', '-')}={v}" for k, v in params.items()]
    code, out = cli("tasks", "create", "--db", db, "--archive", *args)
    assert code == 0, out
    body = json.loads(out)
    assert body.pop("archive") is True
    task = TaskConfig.from_dict(body)
    rng = np.random.default_rng(8)
    with app.app_context():
        for bucket, day in values.items():
            batch = task.mechanism_object.privatize_many(day, rng)
            envelopes = [
                Envelope(new_report_id(), task.fingerprint, bucket, batch.report(i))
                for i in range(len(day))
            ]
            for start in range(0, len(envelopes), 100):
                part = envelopes[start : start + 100]
                assert not get_store().add_reports(task, part, [2**40] * len(part))
            assert len(get_store().add_reports(task, envelopes[:10], [2**40] * 10)) == 10
    return task


def test_the_dask_job_resums_the_archive_to_the_collectors_sums(app: Flask, tmp_path: Path) -> None:
    words = [f"w{i % 11}" for i in range(700)]
    values = {0: words, DAY: words[:300], 2 * DAY: ["w3"] * 50}
    task = seed(
        app,
        {
            "task_id": "words",
            "mechanism": "cms",
            "epsilon": 3,
            "k": 64,
            "m": 32,
            "min_batch_size": 1,
        },
        values,
    )
    db = str(app.config["DATABASE"])
    code, out = cli("export", "words", "--db", db, "--reports", "--output", str(tmp_path / "arc"))
    assert code == 0, out
    files = archive_files(tmp_path / "arc", "words")
    assert [f.parent.name for f in files] == ["day=1970-01-01", "day=1970-01-02", "day=1970-01-03"]
    assert sum(pq.ParquetFile(f).metadata.num_rows for f in files) == 1050  # no replay twice
    assert task_of(files[0]).fingerprint == task.fingerprint

    reports, rows, _ = run_batch(
        tmp_path / "arc", "words", tmp_path / "sums.parquet", workers=1, scheduler=None
    )
    assert reports == 1050
    with app.app_context():
        stored = [(b, s, r, n, c.tolist()) for b, s, r, n, c in get_store().sum_rows(task)]
    resummed = pq.read_table(tmp_path / "sums.parquet").to_pylist()
    assert rows == len(stored)
    assert [(x["bucket"], x["slice"], x["row"], x["n"], x["counters"]) for x in resummed] == stored

    query = ["estimates", "words", "--candidate", "w3", "--candidate", "w7", "--format", "json"]
    from_db = json.loads(cli(*query, "--db", db)[1])
    from_file = json.loads(cli(*query, "--sums", str(tmp_path / "sums.parquet"))[1])
    assert from_file == from_db and from_db["n"] == 1050
    ranged = ["--from", str(DAY), "--to", str(2 * DAY)]
    assert json.loads(cli(*query, *ranged, "--sums", str(tmp_path / "sums.parquet"))[1]) == (
        json.loads(cli(*query, *ranged, "--db", db)[1])
    )


def test_heavy_hitters_read_a_sums_export_as_the_database(app: Flask, tmp_path: Path) -> None:
    words = ["hello"] * 300 + ["help"] * 200 + ["world"] * 150 + [f"x{i}" for i in range(50)]
    params = {
        "task_id": "typed",
        "mechanism": "hh",
        "epsilon": 6,
        "k": 256,
        "m": 256,
        "alphabet": "abcdefghijklmnopqrstuvwxyz0123456789",
        "max_length": 6,
        "min_batch_size": 1,
    }
    seed(app, params, {0: words})
    db = str(app.config["DATABASE"])
    sums = str(tmp_path / "typed.parquet")
    code, out = cli("export", "typed", "--db", db, "--format", "parquet", "--output", sums)
    assert code == 0, out
    query = ["heavy-hitters", "typed", "--top", "3", "--format", "json"]
    assert json.loads(cli(*query, "--sums", sums)[1]) == json.loads(cli(*query, "--db", db)[1])


def test_archive_errors_name_the_fix(app: Flask, tmp_path: Path) -> None:
    db = str(app.config["DATABASE"])
    code, _ = cli("tasks", "create", "--db", db, "--task-id=plain", "--mechanism=rr", "--epsilon=1")
    assert code == 0
    code, out = cli("export", "plain", "--db", db, "--reports", "--output", str(tmp_path / "a"))
    assert code != 0 and "created with --archive" in out
    code, out = cli("export", "plain", "--db", db, "--reports")
    assert code != 0 and "--output FOLDER" in out
    sums = str(tmp_path / "plain.parquet")
    assert cli("export", "plain", "--db", db, "--format", "parquet", "--output", sums)[0] == 0
    code, out = cli("estimates", "other", "--sums", sums)
    assert code != 0 and "not 'other'" in out


def test_the_archive_job_names_its_extra_when_dask_is_missing(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import runpy, sys; sys.modules['dask'] = None; sys.modules['dask.distributed'] = None; "
        f"sys.argv = ['x', {str(tmp_path)!r}, '--task', 't', '--output', 'o.parquet']; "
        "runpy.run_module('ldp_telemetry.aggregator.archive', run_name='__main__')"
    )
    (tmp_path / "task_id=t" / "day=1970-01-01").mkdir(parents=True)
    (tmp_path / "task_id=t" / "day=1970-01-01" / "part-00000.parquet").write_bytes(b"")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "needs the [archive] extra" in done.stderr
