"""The schema as numbered migrations: fresh, upgraded in place, refused when newer (both stores)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ldp_telemetry.aggregator import create_app
from ldp_telemetry.aggregator.api.resources import get_store
from ldp_telemetry.aggregator.cli import main
from ldp_telemetry.aggregator.store.sqlite.migrations import SchemaTooNew, migrations


def versions(db: Path) -> list[int]:
    with sqlite3.connect(db) as conn:
        return [v for (v,) in conn.execute("SELECT version FROM schema_version ORDER BY 1")]


def test_a_fresh_database_records_every_migration(tmp_path: Path) -> None:
    db = tmp_path / "fresh.sqlite3"
    result = CliRunner().invoke(main, ["migrate", "--db", str(db)])
    latest = migrations()[-1][0]
    assert result.exit_code == 0 and f"schema version 0 -> {latest}: migrated" in result.output
    assert versions(db) == list(range(1, latest + 1))
    again = CliRunner().invoke(main, ["migrate", "--db", str(db)])
    assert again.exit_code == 0 and f"schema version {latest}: up to date" in again.output


def test_a_database_of_the_first_release_is_upgraded_in_place(tmp_path: Path) -> None:
    db = tmp_path / "old.sqlite3"
    with sqlite3.connect(db) as conn:  # what the first release wrote: schema + user_version
        conn.executescript(migrations()[0][2])
        conn.execute("INSERT INTO tokens VALUES ('h', 'admin', 1)")
        conn.execute("PRAGMA user_version = 1")
    with create_app({"DATABASE": str(db)}).app_context():
        assert get_store().schema_change == (1, migrations()[-1][0])
        assert get_store().token_role("h") == "admin"  # data kept
    assert versions(db)[0] == 1


def test_a_newer_database_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "new.sqlite3"
    CliRunner().invoke(main, ["migrate", "--db", str(db)])
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO schema_version VALUES (999, 'future', 0)")
    with pytest.raises(SchemaTooNew, match="999"):
        create_app({"DATABASE": str(db)})
    monkeypatch.setenv("LDP_DATABASE", "null")  # serve sets it: restored after the test
    # Every command refuses it with the message, not a traceback (serve and tasks did).
    for command in (["migrate"], ["tasks", "list"], ["serve", "--port", "0"]):
        result = CliRunner().invoke(main, ["--db", str(db), *command])
        assert result.exit_code == 1 and "upgrade ldp-aggregator" in result.output, command
        assert isinstance(result.exception, SystemExit), (command, result.exception)


def test_both_backends_migrate_with_the_same_runner(stores: Any, backend: str) -> None:
    store = stores.open(backend)
    latest = store.schema.migrations()[-1][0]
    assert latest == migrations()[-1][0]  # both backends ship the same numbered steps
    assert store.schema_change == (0, latest)
    with store._read() as tx:
        assert [v for (v,) in tx.execute("SELECT version FROM schema_version ORDER BY 1")] == list(
            range(1, latest + 1)
        )
    assert stores.reopen(store).schema_change == (latest, latest)  # up to date: nothing runs
    with store._write() as tx:
        tx.execute("INSERT INTO schema_version VALUES (999, 'future', 0)")
    with pytest.raises(SchemaTooNew, match="999"):
        stores.reopen(store)
