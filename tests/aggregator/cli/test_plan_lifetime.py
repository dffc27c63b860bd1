"""``tasks plan --changes``: each longitudinal variant's lifetime ε beside the usual table."""

from __future__ import annotations

import json

from click.testing import CliRunner

from ldp_telemetry.aggregator.cli import main


def test_tasks_plan_shows_the_lifetime_table_and_json() -> None:
    args = ["tasks", "plan", "--domain-size", "100", "--devices", "100000", "--epsilon", "1"]
    more = ["--epsilon-inf", "2", "--changes", "99"]
    table = CliRunner().invoke(main, [*args, *more])
    assert table.exit_code == 0, table.output
    assert "rappor   64 (32 permanent responses); silenced by max_epsilon_inf 64" in table.output
    assert "bilolha  4 (2 permanent responses, g = 2)" in table.output
    answer = json.loads(CliRunner().invoke(main, [*args, *more, "--format", "json"]).output)
    assert {r["variant"] for r in answer["lifetime"]} == {"plain", "rappor", "bilolha", "ololoha"}
    assert isinstance(
        json.loads(CliRunner().invoke(main, [*args, "--format", "json"]).output), list
    )
    refused = CliRunner().invoke(main, [*args, "--changes", "3"])
    assert refused.exit_code != 0 and "go together" in refused.output
