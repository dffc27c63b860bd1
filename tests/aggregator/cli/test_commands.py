"""The ldp-aggregator command: tasks and tokens on a database file."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ldp_telemetry.aggregator import create_app
from ldp_telemetry.aggregator.api.auth import role_of
from ldp_telemetry.aggregator.cli import main
from ldp_telemetry.aggregator.core.auth import hash_token


def run(db: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["--db", str(db), *args])
    return result.exit_code, result.output


def test_tasks_create_and_list(tmp_path: Path) -> None:
    db = tmp_path / "cli.sqlite3"
    code, out = run(
        db,
        "tasks",
        "create",
        "--task-id",
        "colours",
        "--mechanism",
        "grr",
        "--epsilon",
        "2",
        "--domain",
        "red,green,blue",
        "--upload-key-required",
    )
    assert code == 0, out
    created = json.loads(out)
    assert created["domain"] == ["red", "green", "blue"] and created["upload_key"]
    code, out = run(
        db,
        "tasks",
        "create",
        "--task-id",
        "words",
        "--mechanism",
        "hcms",
        "--epsilon",
        "4",
        "--k",
        "64",
        "--m",
        "1024",
    )
    assert code == 0 and isinstance(json.loads(out)["hash_seed"], int)
    code, out = run(db, "tasks", "list")
    assert [json.loads(line)["task_id"] for line in out.splitlines()] == ["colours", "words"]


def test_tasks_create_reports_the_fix(tmp_path: Path) -> None:
    code, out = run(
        tmp_path / "cli.sqlite3",
        "tasks",
        "create",
        "--task-id",
        "w",
        "--mechanism",
        "hcms",
        "--epsilon",
        "4",
        "--k",
        "8",
        "--m",
        "1000",
    )
    assert code != 0 and "power of two" in out
    run(
        tmp_path / "cli.sqlite3",
        "tasks",
        "create",
        "--task-id",
        "r",
        "--mechanism",
        "rr",
        "--epsilon",
        "1",
    )
    code, out = run(
        tmp_path / "cli.sqlite3",
        "tasks",
        "create",
        "--task-id",
        "r",
        "--mechanism",
        "rr",
        "--epsilon",
        "2",
    )
    assert code != 0 and "exists already" in out


def test_tokens_create_prints_once_and_stores_the_hash(tmp_path: Path) -> None:
    db = tmp_path / "cli.sqlite3"
    code, out = run(db, "tokens", "create", "--role", "analyst")
    token = out.strip()
    assert code == 0 and len(token) >= 40
    stored = b"".join(path.read_bytes() for path in tmp_path.glob("cli.sqlite3*"))
    assert hash_token(token).encode() in stored and token.encode() not in stored
    with create_app({"DATABASE": str(db)}).app_context():
        assert role_of(token) == "analyst"
        assert role_of(token + "x") is None


def test_tasks_plan_recommends_the_most_accurate_mechanism() -> None:
    result = CliRunner().invoke(
        main, ["tasks", "plan", "--domain-size", "2", "--devices", "1000", "--epsilon", "1"]
    )
    assert result.exit_code == 0, result.output
    assert "recommended: rr" in result.output
    wide = CliRunner().invoke(
        main,
        [
            "tasks",
            "plan",
            "--domain-size",
            "100000",
            "--devices",
            "1000000",
            "--epsilon",
            "4",
            "--format",
            "json",
        ],
    )
    rows = json.loads(wide.output)
    assert [r["std_error"] for r in rows] == sorted(r["std_error"] for r in rows)
    assert {r["mechanism"] for r in rows} == {"cms", "hcms", "olh"}


def test_heavy_hitters_reads_the_store(tmp_path: Path) -> None:
    import numpy as np

    from ldp_telemetry.aggregator.api.resources import get_store
    from ldp_telemetry.shared import Envelope, TaskConfig, new_report_id

    db = tmp_path / "cli.sqlite3"
    code, out = run(
        db,
        "tasks",
        "create",
        "--task-id",
        "words",
        "--mechanism",
        "hh",
        "--epsilon",
        "4",
        "--k",
        "32",
        "--m",
        "128",
        "--alphabet",
        "abcdefgh",
        "--max-length",
        "4",
        "--min-batch-size",
        "10",
    )
    assert code == 0, out
    task = TaskConfig.from_dict(json.loads(out))
    values = ["abba"] * 3000 + ["cafe"] * 2000 + ["bead", "deaf", "face", "head"] * 300
    reports = task.mechanism_object.privatize_many(values, np.random.default_rng(5))
    with create_app({"DATABASE": str(db)}).app_context():
        get_store().add_reports(
            task,
            [
                Envelope(new_report_id(), task.fingerprint, 0, reports.report(i))
                for i in range(len(values))
            ],
            [2**40] * len(values),
        )
    code, out = run(db, "heavy-hitters", "words", "--top", "3", "--format", "json")
    assert code == 0, out
    found = json.loads(out)
    assert found["n"] == len(values)
    assert [row["value"] for row in found["heavy_hitters"]][:2] == ["abba", "cafe"]
    code, out = run(db, "heavy-hitters", "words", "--top", "2")
    assert code == 0 and "abba" in out and "reliable" in out
    run(db, "tasks", "create", "--task-id", "yes", "--mechanism", "rr", "--epsilon", "1")
    code, out = run(db, "heavy-hitters", "yes")
    assert code != 0 and "cannot list" in out
    code, out = run(db, "heavy-hitters", "nope")
    assert code != 0 and "no task" in out


def test_tasks_plan_shows_attackability_and_auto() -> None:
    args = ["tasks", "plan", "--domain-size", "128", "--devices", "100000", "--epsilon", "4"]
    table = CliRunner().invoke(main, args)
    assert table.exit_code == 0, table.output
    grr = next(line for line in table.output.splitlines() if line.startswith("grr "))
    assert "0.301" in grr and "38.5x" in grr
    assert "auto (reports up to 512 bytes) chooses: ss" in table.output
    assert "at most 0.355 after one report" in table.output
    rows = json.loads(CliRunner().invoke(main, [*args, "--format", "json"]).output)
    assert [r["mechanism"] for r in rows if r["chosen_by_auto"]] == ["ss"]
    assert {r["mechanism"]: round(r["attack_success"], 3) for r in rows}["hcms"] == 0.015


def test_tasks_create_auto(tmp_path: Path) -> None:
    code, out = run(
        tmp_path / "cli.sqlite3",
        "tasks",
        "create",
        "--task-id",
        "auto",
        "--mechanism",
        "auto",
        "--epsilon",
        "4",
        "--expected-distinct",
        "5000",
    )
    assert code == 0, out
    created = json.loads(out)
    assert created["mechanism"] == created["selection"]["mechanism"] == "olh"
