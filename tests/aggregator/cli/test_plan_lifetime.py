"""``tasks plan --changes``: each longitudinal variant's lifetime ε beside the usual table;
``--batches``: a shuffled device's central ε over many batches, composed."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from ldp_telemetry.aggregator.cli import main
from ldp_telemetry.shared.shuffling.accountant import central_epsilon
from ldp_telemetry.shared.shuffling.amplification import generic
from ldp_telemetry.shared.shuffling.composition import optimal_homogeneous_epsilon


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


def test_tasks_plan_shows_a_shuffled_devices_central_epsilon_over_a_year() -> None:
    args = ["tasks", "plan", "--domain-size", "100", "--devices", "100000", "--epsilon", "2"]
    more = ["--batches", "365", "--batch-size", "10000"]
    answer = json.loads(CliRunner().invoke(main, [*args, *more, "--format", "json"]).output)
    central = answer["central_lifetime"]
    one = central_epsilon(generic(2.0).reduction(), 10_000, 1e-8)
    assert central["batch_epsilon"] == pytest.approx(one, rel=1e-12)
    assert (central["batches"], central["delta"]) == (365, 2 * 365 * 1e-8)
    assert central["naive_epsilon"] == pytest.approx(365 * one, rel=1e-12)
    exact = optimal_homogeneous_epsilon(one, 1e-8, 365, central["delta"])
    assert exact * (1 - 1e-8) <= central["epsilon"] <= exact * 1.001
    assert central["epsilon"] < central["naive_epsilon"] / 3
    table = CliRunner().invoke(main, [*args, *more])
    assert table.exit_code == 0, table.output
    assert f"a device in 365 of them (one a period): {central['epsilon']:.4g} composed" in (
        table.output
    )
    default = json.loads(
        CliRunner().invoke(main, [*args, "--batches", "2", "--format", "json"]).output
    )
    assert default["central_lifetime"]["batch_size"] == 100_000  # --devices
