"""The command line's store commands run where Flask cannot be imported: only ``serve``
builds the collector's app (docs/architecture.md), the others open a store directly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from ldp_telemetry.aggregator.core import config
from ldp_telemetry.aggregator.store import open_store
from ldp_telemetry.shared import Envelope, TaskConfig, new_report_id

ROOT = Path(__file__).resolve().parents[3]
# A None in sys.modules makes `import flask` raise ImportError, wherever it is imported.
WITHOUT_FLASK = (
    "import sys\n"
    "for name in ('flask', 'werkzeug', 'jinja2'):\n"
    "    sys.modules[name] = None\n"
    "from ldp_telemetry.aggregator.cli import main\n"
    "main(sys.argv[1:], prog_name='ldp-aggregator')\n"
)


def run(db: Path, *args: str) -> str:
    """Run ``ldp-aggregator --db DB ARGS`` without Flask; return its output."""
    paths = (ROOT / p for p in (".", "client", "shared", "aggregator"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("LDP_")}
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_FLASK, "--db", str(db), *args],
        cwd=db.parent,
        env={**env, "PYTHONPATH": os.pathsep.join(map(str, paths))},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"{args}: {done.stderr}"
    return done.stdout


def add_reports(db: Path, task: TaskConfig, values: list[int]) -> None:
    """Store privatized reports of ``values`` in the task's first bucket."""
    store = open_store(str(db), config.load(str(db.parent), {"DATABASE": str(db)}))
    store.initialize()
    privatized = task.mechanism_object.privatize_many(values, np.random.default_rng(1))
    reports = [Envelope(new_report_id(), task.fingerprint, 0, int(x)) for x in privatized]
    store.add_reports(task, reports, [2**40] * len(reports))
    getattr(store, "close", lambda: None)()


def test_store_commands_never_import_flask(tmp_path: Path) -> None:
    db = tmp_path / "no-flask.sqlite3"
    created = run(
        db, "tasks", "create", "--task-id", "t", "--mechanism", "rr", "--epsilon", "2",
        "--min-batch-size", "1",
    )  # fmt: skip
    task = TaskConfig.from_dict({k: v for k, v in json.loads(created).items() if k != "archive"})
    assert [json.loads(line)["task_id"] for line in run(db, "tasks", "list").splitlines()] == ["t"]
    assert run(db, "tokens", "create", "--role", "analyst").strip()
    assert "analyst" in run(db, "tokens", "list")
    key_id = run(db, "keys", "new").strip()
    assert key_id in run(db, "keys", "list")
    add_reports(db, task, [1] * 300 + [0] * 100)
    estimated = json.loads(run(db, "estimates", "t", "--format", "json"))
    assert estimated["n"] == 400
    assert json.loads(run(db, "export", "t"))["task"]["task_id"] == "t"
    assert "t" in run(db, "export", "t", "--what", "estimates", "--format", "csv")
    run(db, "migrate")
    run(db, "backup", str(tmp_path / "copy.sqlite3"))
    assert (tmp_path / "copy.sqlite3").is_file()
