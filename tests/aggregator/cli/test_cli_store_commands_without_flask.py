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
# A None in sys.modules makes `import flask` raise ImportError, wherever it is imported. The
# commands of one call run one after the other in one process (a process per command cost a
# second or more each of imports), each with its own output; one that fails stops the rest.
WITHOUT_FLASK = (
    "import contextlib, io, json, sys\n"
    "for name in ('flask', 'werkzeug', 'jinja2'):\n"
    "    sys.modules[name] = None\n"
    "from ldp_telemetry.aggregator.cli import main\n"
    "outputs = []\n"
    "for args in json.loads(sys.argv[1]):\n"
    "    out = io.StringIO()\n"
    "    with contextlib.redirect_stdout(out):\n"
    "        try:\n"
    "            main(args, prog_name='ldp-aggregator')\n"
    "        except SystemExit as stop:\n"
    "            if stop.code not in (None, 0):\n"
    "                raise\n"
    "    outputs.append(out.getvalue())\n"
    "print(json.dumps(outputs))\n"
)


def run(db: Path, *commands: list[str]) -> list[str]:
    """Run ``ldp-aggregator --db DB COMMAND`` for each command, in order, in one process
    where Flask cannot be imported; return their outputs."""
    paths = (ROOT / p for p in (".", "client", "shared", "aggregator"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("LDP_")}
    argv = [["--db", str(db), *command] for command in commands]
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_FLASK, json.dumps(argv)],
        cwd=db.parent,
        env={**env, "PYTHONPATH": os.pathsep.join(map(str, paths))},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"{commands}: {done.stderr}"
    outputs: list[str] = json.loads(done.stdout)
    assert len(outputs) == len(commands)
    return outputs


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
    created, listed, token, tokens, key_id, keys = run(
        db,
        ["tasks", "create", "--task-id", "t", "--mechanism", "rr", "--epsilon", "2",
         "--min-batch-size", "1"],
        ["tasks", "list"],
        ["tokens", "create", "--role", "analyst"],
        ["tokens", "list"],
        ["keys", "new"],
        ["keys", "list"],
    )  # fmt: skip
    task = TaskConfig.from_dict({k: v for k, v in json.loads(created).items() if k != "archive"})
    assert [json.loads(line)["task_id"] for line in listed.splitlines()] == ["t"]
    assert token.strip() and "analyst" in tokens
    assert key_id.strip() and key_id.strip() in keys
    add_reports(db, task, [1] * 300 + [0] * 100)
    estimated, exported, csv, _, _ = run(
        db,
        ["estimates", "t", "--format", "json"],
        ["export", "t"],
        ["export", "t", "--what", "estimates", "--format", "csv"],
        ["migrate"],
        ["backup", str(tmp_path / "copy.sqlite3")],
    )
    assert json.loads(estimated)["n"] == 400
    assert json.loads(exported)["task"]["task_id"] == "t"
    assert "t" in csv
    assert (tmp_path / "copy.sqlite3").is_file()
