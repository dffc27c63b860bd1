"""Every kind's task, the values 300 devices hold, and the check of the collector's answers:
what the SDKs' end-to-end tests (tests/sdk_js, tests/sdk_java) share, each with its own
device driver.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tests.support.reports import create_task_json, estimates_json

DEVICES = 300
FRUIT = {"apple": 150, "banana": 90, "cherry": 60, "durian": 0}
WORDS = {"abca": 150, "bad": 90, "cab": 60, "dd": 0}
SKETCH = {"k": 64, "m": 256}
# oue and ss over eight values, four never held (ss at ε = 1: subsets of ω = 2).
COLOURS = [*FRUIT, "elder", "fig", "grape", "kiwi"]


def tasks(prefix: str, *, protocol_1_1: bool = False) -> dict[str, dict[str, Any]]:
    """Return every kind's task, ids ``<prefix>-<kind>``; with protocol 1.1's longitudinal
    variants too: LOLOHA (§3.13) and the one-bit mean's (§3.9)."""
    long_flip = {"epsilon_inf": 5.0, "flip": 0.05}
    made: dict[str, dict[str, Any]] = {
        "rr": {"mechanism": "rr", "epsilon": 2.0},
        "rr-long": {"mechanism": "rr", "longitudinal": {"epsilon_inf": 3.0, "epsilon_1": 2.0}},
        "grr": {"mechanism": "grr", "epsilon": 3.0, "domain": list(FRUIT)},
        "grr-long": {
            "mechanism": "grr",
            "domain": list(FRUIT),
            "longitudinal": {"epsilon_inf": 4.0, "flip": 0.05},
        },
        "cms": {"mechanism": "cms", "epsilon": 4.0, **SKETCH},
        "cms-long": {"mechanism": "cms", "longitudinal": long_flip, **SKETCH},
        "hcms": {"mechanism": "hcms", "epsilon": 4.0, **SKETCH},
        "hcms-long": {"mechanism": "hcms", "longitudinal": long_flip, **SKETCH},
        "olh": {"mechanism": "olh", "epsilon": 3.0, "k": 64},
        "oue": {"mechanism": "oue", "epsilon": 2.0, "domain": COLOURS},
        "ss": {"mechanism": "ss", "epsilon": 1.0, "domain": COLOURS},
        "hh": {"mechanism": "hh", "epsilon": 4.0, "alphabet": "abcd", "max_length": 4, **SKETCH},
        "sw": {"mechanism": "numeric", "epsilon": 3.0, "lo": 0, "hi": 100, "buckets": 32},
        "1bit": {"mechanism": "numeric", "epsilon": 3.0, "lo": 0, "hi": 100, "method": "1bit"},
    }
    if protocol_1_1:
        made["loloha"] = {
            "mechanism": "grr",
            "domain": list(FRUIT),
            "longitudinal": {"variant": "loloha", "epsilon_inf": 5.0, "epsilon_1": 4.0, "g": 4},
        }
        made["1bit-long"] = {
            "mechanism": "numeric",
            "lo": 0,
            "hi": 100,
            "method": "1bit",
            "longitudinal": {"epsilon_inf": 4.0, "epsilon_1": 3.0},
        }
    return {f"{prefix}-{name}": fields for name, fields in made.items()}


def create(collector_url: str, every: dict[str, dict[str, Any]]) -> None:
    """Create the tasks on the collector (min_batch_size 1: every answer is given)."""
    for task_id, fields in every.items():
        create_task_json(collector_url, task_id=task_id, min_batch_size=1, **fields)


def spread(counts: dict[str, int]) -> list[str]:
    return [value for value, count in counts.items() for _ in range(count)]


def device_values(every: dict[str, dict[str, Any]], rng: np.random.Generator) -> dict[str, list]:
    """Return each task's value per device (shuffled: devices record in another order)."""
    yes = [True] * 200 + [False] * 100
    latencies = [float(x) for x in rng.uniform(10, 70, DEVICES)]
    plan: dict[str, list[Any]] = {}
    for task_id, fields in every.items():
        kind = fields["mechanism"]
        column = yes if kind == "rr" else latencies if kind == "numeric" else spread(FRUIT)
        plan[task_id] = list(rng.permutation(np.array(column, dtype=object)))
    for task_id, fields in every.items():  # drawn last, as the tests always drew them
        if fields["mechanism"] == "hh":
            plan[task_id] = list(rng.permutation(np.array(spread(WORDS), dtype=object)))
    return plan


def within(row: dict[str, Any], truth: float, sigmas: float = 4.0) -> bool:
    return abs(row["estimate"] - truth) <= sigmas * row["std_error"]


def check_answers(
    collector_url: str, every: dict[str, dict[str, Any]], plan: dict[str, list]
) -> None:
    """Assert every task's n is exact and its estimates within 4 SE of the truth."""
    for task_id, fields in every.items():
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
