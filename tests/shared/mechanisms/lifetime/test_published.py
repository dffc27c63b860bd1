"""Longitudinal rr, grr and LOLOHA tasks publish one report's attack success (PROTOCOL §1.3)."""

from __future__ import annotations

from typing import Any

import pytest

from ldp_telemetry.shared import TaskConfig
from tests.shared.cases import all_outputs

DOMAIN = [f"v{i}" for i in range(6)]


def bayes_success(mechanism: Any, values: list[Any]) -> float:
    """Return the uniform-prior adversary's top-1 success from one report, enumerated."""
    outputs = all_outputs(mechanism)
    best = sum(max(mechanism.output_probability(v, o) for v in values) for o in outputs)
    return float(best / len(values))


@pytest.mark.parametrize(
    ("fields", "values"),
    [
        ({"mechanism": "rr", "longitudinal": {"epsilon_inf": 2.0, "flip": 0.1}}, [True, False]),
        (
            {
                "mechanism": "grr",
                "domain": DOMAIN,
                "longitudinal": {"epsilon_inf": 3, "epsilon_1": 1},
            },
            DOMAIN,
        ),
    ],
)
def test_a_longitudinal_task_publishes_its_per_report_attack_success(
    fields: dict[str, Any], values: list[Any]
) -> None:
    task = TaskConfig.create(task_id="t", **fields)
    published = task.to_dict()["attack_success"]
    assert published == pytest.approx(bayes_success(task.mechanism_object, values), rel=1e-12)
    assert "attack_success" not in task.canonical_form()  # informative, not fingerprinted


def test_a_loloha_task_publishes_olhs_closed_form_over_its_domain() -> None:
    """Over a large family the enumerated success is the closed form's average over hashes."""
    layer = {"variant": "loloha", "epsilon_inf": 3, "epsilon_1": 1.5, "g": 3, "seeds": 2048}
    task = TaskConfig.create(
        task_id="t", mechanism="grr", domain=DOMAIN, longitudinal={**layer, "hash_seed": 9}
    )
    published = task.to_dict()["attack_success"]
    assert published == pytest.approx(bayes_success(task.mechanism_object, DOMAIN), rel=0.03)
    assert 1 / len(DOMAIN) < published < 1
