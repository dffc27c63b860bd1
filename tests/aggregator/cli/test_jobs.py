"""The CLI's analyst and operator jobs: --db anywhere, estimates, export, backup, tokens."""

from __future__ import annotations

import csv
import io
import json
import os
import sqlite3
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq  # the [parquet] extra, part of the test extra
import pytest
from click.testing import CliRunner

from ldp_telemetry.aggregator import create_app
from ldp_telemetry.aggregator.api.auth import role_of
from ldp_telemetry.aggregator.api.resources import get_store
from ldp_telemetry.aggregator.cli import main
from ldp_telemetry.aggregator.core.auth import hash_token
from ldp_telemetry.shared import Envelope, TaskConfig, new_report_id

DAY = 86_400
COLOURS = ["red", "green", "blue"]


def run(*args: str, env: dict[str, str] | None = None, stdin: str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), env=env, input=stdin)
    return result.exit_code, result.output


def seeded_db(tmp_path: Path) -> tuple[Path, TaskConfig, dict[int, list[str]]]:
    """A database with a GRR task and reports in two daily buckets (ε large: near exact)."""
    db = tmp_path / "jobs.sqlite3"
    code, out = run(
        "tasks",
        "create",
        "--db",
        str(db),
        "--task-id",
        "colours",
        "--mechanism",
        "grr",
        "--epsilon",
        "12",
        "--domain",
        ",".join(COLOURS),
        "--min-batch-size",
        "50",
    )
    assert code == 0, out
    task = TaskConfig.from_dict(json.loads(out))
    values = {0: ["red"] * 60 + ["blue"] * 40, DAY: ["green"] * 30}  # day 1 below min batch
    rng = np.random.default_rng(3)
    with create_app({"DATABASE": str(db)}).app_context():
        for bucket, day in values.items():
            payloads = [task.mechanism_object.privatize(v, rng) for v in day]
            get_store().add_reports(
                task,
                [Envelope(new_report_id(), task.fingerprint, bucket, p) for p in payloads],
                [2**40] * len(payloads),
            )
    return db, task, values


def test_db_is_accepted_after_the_command_and_from_ldp_db(tmp_path: Path) -> None:
    db = tmp_path / "env.sqlite3"
    assert (
        run(
            "tasks",
            "create",
            "--task-id",
            "r",
            "--mechanism",
            "rr",
            "--epsilon",
            "1",
            env={"LDP_DB": str(db)},
        )[0]
        == 0
    )
    code, out = run("tasks", "list", "--db", str(db))
    assert code == 0 and json.loads(out)["task_id"] == "r"
    code, out = run("--db", str(tmp_path / "other.sqlite3"), "tasks", "list", "--db", str(db))
    assert code == 0 and json.loads(out)["task_id"] == "r"  # the command's --db wins


def test_serve_takes_db_after_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(
        "ldp_telemetry.aggregator.cli.server_commands.os.execv",
        lambda _exe, argv: calls.append(argv),
    )
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path / "metrics"))
    monkeypatch.setenv("LDP_DATABASE", '"replaced by serve"')  # restored after the test
    db = tmp_path / "serve.sqlite3"
    code, out = run("serve", "--db", str(db), "--port", "0")
    assert code == 0, out
    assert (
        db.exists() and calls and "ldp_telemetry.aggregator.serving.wsgi:app" in " ".join(calls[0])
    )
    assert json.loads(os.environ["LDP_DATABASE"]) == str(db)


def test_estimates_prints_table_json_and_csv(tmp_path: Path) -> None:
    db, _, _ = seeded_db(tmp_path)
    code, out = run("estimates", "colours", "--db", str(db), "--to", "1970-01-02")
    assert code == 0, out
    assert out.splitlines()[0].split()[:3] == ["value", "estimate", "std_error"]
    code, out = run("estimates", "colours", "--db", str(db), "--to", str(DAY), "--format", "json")
    body = json.loads(out)
    counts = {row["value"]: row["estimate"] for row in body["estimates"]}
    assert body["n"] == 100 and abs(counts["red"] - 60) < 3 and abs(counts["green"]) < 3
    code, out = run(
        "estimates", "colours", "--db", str(db), "--candidate", "blue", "--format", "csv"
    )
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["value"] for r in rows] == ["blue"] and abs(float(rows[0]["estimate"]) - 40) < 3
    code, out = run(
        "estimates",
        "colours",
        "--db",
        str(db),
        "--candidates-file",
        "-",
        "--format",
        "json",
        stdin="red\ngreen\n",
    )
    assert [r["value"] for r in json.loads(out)["estimates"]] == ["red", "green"]


def test_estimates_errors_name_the_fix(tmp_path: Path) -> None:
    db, _, _ = seeded_db(tmp_path)
    code, out = run("estimates", "colours", "--db", str(db), "--from", str(DAY))
    assert code != 0 and "only 30 reports" in out and "below_min_batch_size" in out
    code, out = run("estimates", "colours", "--db", str(db), "--candidate", "purple")
    assert code != 0 and "purple" in out
    code, out = run("estimates", "nope", "--db", str(db))
    assert code != 0 and "no task 'nope'" in out
    code, out = run("estimates", "colours", "--db", str(db), "--from", "yesterday")
    assert code != 0 and "ISO 8601" in out


def test_export_sums_match_the_store_in_every_format(tmp_path: Path) -> None:
    db, task, _ = seeded_db(tmp_path)
    code, out = run("export", "colours", "--db", str(db))
    assert code == 0, out
    records = json.loads(out)["records"]
    assert [(r["bucket"], r["n"]) for r in records] == [(0, 100), (DAY, 30)]
    with (
        create_app({"DATABASE": str(db)}).app_context(),
        get_store().read_sums(task, 0, DAY) as sums,
    ):
        assert records[0]["counters"] == sums.table[0].tolist()
    code, out = run("export", "colours", "--db", str(db), "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [int(x) for x in rows[1]["counters"].split()] == records[1]["counters"]
    target = tmp_path / "sums.parquet"
    assert (
        run("export", "colours", "--db", str(db), "--format", "parquet", "-o", str(target))[0] == 0
    )
    table = pq.read_table(target).to_pylist()
    assert [r["counters"] for r in table] == [r["counters"] for r in records]


def test_export_estimates_per_bucket_leaves_out_small_buckets(tmp_path: Path) -> None:
    db, _, _ = seeded_db(tmp_path)
    result = CliRunner().invoke(
        main, ["export", "colours", "--db", str(db), "--what", "estimates", "--format", "csv"]
    )
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert {r["bucket"] for r in rows} == {"0"} and [r["value"] for r in rows] == COLOURS
    assert "1 bucket(s) below min_batch_size 50 left out" in result.stderr


def test_backup_is_a_complete_database(tmp_path: Path) -> None:
    db, _, _ = seeded_db(tmp_path)
    run("tokens", "create", "--db", str(db), "--role", "admin")
    copy = tmp_path / "backup.sqlite3"
    code, out = run("backup", "--db", str(db), str(copy))
    assert code == 0 and str(copy) in out
    code, out = run("backup", "--db", str(db), str(copy))
    assert code != 0 and "exists" in out
    code, out = run("export", "colours", "--db", str(copy))
    original = run("export", "colours", "--db", str(db))[1]
    assert code == 0 and out == original
    with sqlite3.connect(copy) as conn:
        assert conn.execute("SELECT count(*) FROM tokens").fetchone()[0] == 1


def test_tokens_list_revoke_rotate(tmp_path: Path) -> None:
    db = tmp_path / "tokens.sqlite3"
    analyst = run("tokens", "create", "--db", str(db), "--role", "analyst")[1].strip()
    admin = run("tokens", "create", "--db", str(db), "--role", "admin")[1].strip()
    code, out = run("tokens", "list", "--db", str(db), "--format", "json")
    listed = json.loads(out)
    assert code == 0 and {t["role"] for t in listed} == {"analyst", "admin"}
    assert analyst not in out and admin not in out  # ids are hash prefixes, not tokens
    analyst_id = hash_token(analyst)[:12]
    assert {t["id"] for t in listed} == {analyst_id, hash_token(admin)[:12]}
    code, out = run("tokens", "rotate", "--db", str(db), analyst_id)
    new = out.splitlines()[0].strip()
    assert code == 0 and new != analyst
    with create_app({"DATABASE": str(db)}).app_context():
        assert role_of(analyst) is None and role_of(new) == "analyst"
    code, out = run("tokens", "revoke", "--db", str(db), hash_token(admin)[:8])
    assert code == 0 and "revoked admin" in out
    with create_app({"DATABASE": str(db)}).app_context():
        assert role_of(admin) is None
    code, out = run("tokens", "revoke", "--db", str(db), hash_token(admin)[:12])
    assert code != 0 and "no stored token" in out
    code, out = run("tokens", "revoke", "--db", str(db), "abc")
    assert code != 0 and "at least 8" in out
