"""The Java SDK on the JVM against a real collector: every kind counted exactly, estimates
within 4 standard errors of the truth.

Each simulated device is a client of its own (its own secret and budget) that records one
value per task and closes (E2eDriver "devices" in sdk-java/src/test/java).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.sdk_java.helpers import run_driver
from tests.support.reports import create_task_json, estimates_json

pytestmark = [pytest.mark.timeout(600), pytest.mark.usefixtures("java_sdk")]
DEVICES = 300
FRUIT = {"apple": 150, "banana": 90, "cherry": 60, "durian": 0}
WORDS = {"abca": 150, "bad": 90, "cab": 60, "dd": 0}
SKETCH = {"k": 64, "m": 256}
COLOURS = [*FRUIT, "elder", "fig", "grape", "kiwi"]

TASKS: dict[str, dict[str, Any]] = {
    "java-rr": {"mechanism": "rr", "epsilon": 2.0},
    "java-rr-long": {"mechanism": "rr", "longitudinal": {"epsilon_inf": 3.0, "epsilon_1": 2.0}},
    "java-grr": {"mechanism": "grr", "epsilon": 3.0, "domain": list(FRUIT)},
    "java-grr-long": {
        "mechanism": "grr",
        "domain": list(FRUIT),
        "longitudinal": {"epsilon_inf": 4.0, "flip": 0.05},
    },
    "java-cms": {"mechanism": "cms", "epsilon": 4.0, **SKETCH},
    "java-cms-long": {
        "mechanism": "cms",
        "longitudinal": {"epsilon_inf": 5.0, "flip": 0.05},
        **SKETCH,
    },
    "java-hcms": {"mechanism": "hcms", "epsilon": 4.0, **SKETCH},
    "java-hcms-long": {
        "mechanism": "hcms",
        "longitudinal": {"epsilon_inf": 5.0, "flip": 0.05},
        **SKETCH,
    },
    "java-olh": {"mechanism": "olh", "epsilon": 3.0, "k": 64},
    "java-oue": {"mechanism": "oue", "epsilon": 2.0, "domain": COLOURS},
    "java-ss": {"mechanism": "ss", "epsilon": 1.0, "domain": COLOURS},
    "java-hh": {"mechanism": "hh", "epsilon": 4.0, "alphabet": "abcd", "max_length": 4, **SKETCH},
    "java-sw": {"mechanism": "numeric", "epsilon": 3.0, "lo": 0, "hi": 100, "buckets": 32},
    "java-1bit": {"mechanism": "numeric", "epsilon": 3.0, "lo": 0, "hi": 100, "method": "1bit"},
    # Protocol 1.1's longitudinal variants: LOLOHA (§3.13) and the one-bit mean's (§3.9).
    "java-loloha": {
        "mechanism": "grr",
        "domain": list(FRUIT),
        "longitudinal": {"variant": "loloha", "epsilon_inf": 5.0, "epsilon_1": 4.0, "g": 4},
    },
    "java-1bit-long": {
        "mechanism": "numeric",
        "lo": 0,
        "hi": 100,
        "method": "1bit",
        "longitudinal": {"epsilon_inf": 4.0, "epsilon_1": 3.0},
    },
}


def spread(counts: dict[str, int]) -> list[str]:
    return [value for value, count in counts.items() for _ in range(count)]


def values(rng: np.random.Generator) -> dict[str, list[Any]]:
    """Return each task's value per device (shuffled: devices record in another order)."""
    yes = [True] * 200 + [False] * 100
    latencies = [float(x) for x in rng.uniform(10, 70, DEVICES)]
    plan: dict[str, list[Any]] = {}
    for task_id, fields in TASKS.items():
        kind = fields["mechanism"]
        column = yes if kind == "rr" else latencies if kind == "numeric" else spread(FRUIT)
        plan[task_id] = list(rng.permutation(np.array(column, dtype=object)))
    plan["java-hh"] = list(rng.permutation(np.array(spread(WORDS), dtype=object)))
    return plan


def within(row: dict[str, Any], truth: float, sigmas: float = 4.0) -> bool:
    return abs(row["estimate"] - truth) <= sigmas * row["std_error"]


def test_every_kind_counted_exactly_and_estimated(collector_url: str, tmp_path: Path) -> None:
    for task_id, fields in TASKS.items():
        create_task_json(collector_url, task_id=task_id, min_batch_size=1, **fields)
    plan = values(np.random.default_rng(40))
    stats = run_driver({"mode": "devices", "endpoint": collector_url, "values": plan}, tmp_path)
    assert stats == {"sent": DEVICES * len(TASKS), "queued": 0, "dropped": {}, "rejected": {}}
    for task_id, fields in TASKS.items():
        kind = fields["mechanism"]
        if kind == "numeric":
            answer = estimates_json(collector_url, task_id, candidates=["mean"])
            assert answer["n"] == DEVICES
            assert within(answer["estimates"][0], float(np.mean(plan[task_id]))), task_id
            continue
        truth = {True: 200, False: 100} if kind == "rr" else WORDS if kind == "hh" else FRUIT
        if "domain" in fields:  # every domain value, the never-held ones too
            truth = {value: FRUIT.get(value, 0) for value in fields["domain"]}
        query = {} if kind == "rr" else {"candidates": list(truth)}
        answer = estimates_json(collector_url, task_id, **query)
        assert answer["n"] == DEVICES, task_id
        for row in answer["estimates"]:
            assert within(row, truth[row["value"]]), (task_id, row)
