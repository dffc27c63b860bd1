"""Migration 3: tasks kept before protocol 1.0 are re-fingerprinted by RFC 8785."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from typing import Any

import psycopg
import pytest
from flask import Flask

from ldp_telemetry.aggregator import create_app
from ldp_telemetry.aggregator.api.resources import get_store
from ldp_telemetry.shared import ParameterError, TaskConfig
from tests.aggregator.stores import WITHOUT_SLICES
from tests.support.servers import ADMIN, bearer

TASKS = [
    {"task_id": "words", "mechanism": "cms", "epsilon": 4, "k": 4, "m": 64, "hash_seed": 7},
    {"task_id": "latency", "mechanism": "numeric", "epsilon": 1, "lo": 0, "hi": 1000},
    {"task_id": "seen", "mechanism": "rr", "longitudinal": {"epsilon_inf": 2, "flip": 0.25}},
]


def pre_1_0(task: TaskConfig) -> str:
    """Return the configuration a collector kept before protocol 1.0 (Python repr hash)."""
    fields = {
        k: v for k, v in task.to_dict().items() if k not in ("protocol", "derived", "fingerprint")
    }
    fields.pop("effective_epsilon"), fields.pop("effective_epsilon_inf", None)
    old = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    fields["fingerprint"] = hashlib.sha256(old.encode()).hexdigest()[:32]
    return json.dumps(fields, sort_keys=True)


def execute(db: str, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
    """Run statements on the database itself, as an old collector had left it."""
    if db.startswith("postgresql"):
        with psycopg.connect(db) as conn:
            for sql, args in statements:
                conn.execute(sql.replace("?", "%s"), args)
        return
    with sqlite3.connect(db) as conn:
        for sql, args in statements:
            conn.execute(sql, args)


def test_tasks_of_an_old_database_are_refingerprinted(app: Flask) -> None:
    """``app``: a fresh database of each backend (conftest), migrated to the latest."""
    db = str(app.config["DATABASE"])
    client = app.test_client()
    for spec in TASKS:
        assert client.post("/v1/tasks", json=spec, headers=bearer(ADMIN)).status_code == 201
    tasks = [TaskConfig.from_dict(client.get(f"/v1/tasks/{s['task_id']}").json) for s in TASKS]
    old = [pre_1_0(task) for task in tasks]
    with pytest.raises(ParameterError, match="fingerprint"):
        TaskConfig.from_dict(json.loads(old[0]))  # why the migration is needed
    # The database as schema version 2 left it: the old configurations, no migration 3.
    execute(
        db,
        [
            ("UPDATE tasks SET config = ? WHERE task_id = ?", (o, t.task_id))
            for o, t in zip(old, tasks, strict=True)
        ]
        + [
            (statement, ())
            for statement in WITHOUT_SLICES[
                "postgresql" if db.startswith("postgresql") else "sqlite"
            ]
        ]
        + [("DELETE FROM schema_version WHERE version >= 3", ())],
    )
    migrated = create_app({"TESTING": True, "DATABASE": db})
    with migrated.app_context():
        assert get_store().schema_change[0] == 2
    for task in tasks:
        served = migrated.test_client().get(f"/v1/tasks/{task.task_id}").json
        assert served["fingerprint"] == task.fingerprint != json.loads(old[0])["fingerprint"]
        assert served["protocol"] == "1.0" and served["derived"] == task.derived
        assert TaskConfig.from_dict(served) == task
