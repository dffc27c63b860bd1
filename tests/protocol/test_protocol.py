"""PROTOCOL.md holds: golden vectors, and a client written from it alone that the collector
accepts and counts correctly."""

from __future__ import annotations

import ast
import base64
import json
import math
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import requests

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "aggregator"))  # the aggregator tests' server helper

import independent_client as ic  # noqa: E402
import vectors  # noqa: E402
from agg_server import ADMIN, ANALYST, bearer, start_server  # noqa: E402

from shared import TaskConfig  # noqa: E402

VECTORS: dict[str, Any] = json.loads(vectors.FILE.read_text(encoding="utf-8"))
PROJECT_PACKAGES = {"shared", "client", "aggregator", "simulations", "benchmarks", "demo"}


def test_the_implementation_matches_the_golden_vectors() -> None:
    assert vectors.build() == VECTORS, (
        "the wire protocol changed: if on purpose, run python tests/protocol/vectors.py "
        "--write --force and say so in PROTOCOL.md"
    )


def test_the_independent_client_imports_nothing_of_the_project() -> None:
    tree = ast.parse((HERE / "independent_client.py").read_text())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    imported |= {
        (node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
    }
    assert not imported & PROJECT_PACKAGES
    assert imported <= {
        "__future__",
        "base64",
        "hashlib",
        "json",
        "math",
        "os",
        "secrets",
        "urllib",
        "typing",
        "mmh3",
    }


def test_the_independent_client_reproduces_the_vectors() -> None:
    mix = VECTORS["splitmix64"]
    assert [f"{w:016x}" for w in ic.splitmix64(mix["seed"], len(mix["words"]))] == mix["words"]
    rows = VECTORS["row_constants"]
    family = ic.HashFamily(rows["seed"], rows["k"], 1000)
    assert [f"{a:016x}" for a in family.a] == rows["a"]
    assert [f"{b:016x}" for b in family.b] == rows["b"]
    for case in VECTORS["keys"]:
        assert f"{family.key(case['value']):016x}" == case["key"]
    for case in VECTORS["buckets"]:
        hashes = ic.HashFamily(case["seed"], len(case["rows"]), case["m"])
        key = hashes.key(case["value"])
        assert [hashes.bucket(key, j) for j in range(len(case["rows"]))] == case["rows"]
    for case in VECTORS["tasks"]:
        assert ic.fingerprint(case["task"]) == case["fingerprint"], case["task"]["task_id"]
    for row in VECTORS["thresholds"]:
        e = row["epsilon"]
        assert ic.threshold(1 / (1 + math.exp(e))) == row["rr_lie"] == row["hcms_flip"]
        assert ic.threshold(1 / (math.exp(e) + 2)) == row["grr_d3_other"]
        assert ic.threshold(1 / (1 + math.exp(e / 2))) == row["cms_flip"]
        g = ic.olh_buckets(e)
        assert g == row["olh_g"] and ic.threshold(1 / (math.exp(e) + g - 1)) == row["olh_other"]
        assert ic.threshold(1 / (math.exp(e) + 1)) == row["oue_other"]
        omega = ic.ss_size(e, 10)
        exclude = ic.threshold((10 - omega) / (omega * math.exp(e) + 10 - omega))
        assert omega == row["ss_d10_size"] and exclude == row["ss_d10_exclude"]
    for case in VECTORS["tasks"]:
        if "thresholds" in case["task"]:  # oue, ss: what the device derives, published
            task = case["task"]
            e, d = task["epsilon"], len(task["domain"])
            if task["mechanism"] == "oue":
                expected = {"keep": 1 << 31, "other": ic.threshold(1 / (math.exp(e) + 1))}
            else:
                omega = ic.ss_size(e, d)
                expected = {
                    "subset_size": omega,
                    "exclude": ic.threshold((d - omega) / (omega * math.exp(e) + d - omega)),
                }
            assert task["thresholds"] == expected


def test_the_packing_rule_matches_the_vector() -> None:
    cms = next(c for c in VECTORS["tasks"] if c["task"]["mechanism"] == "cms")
    bits = [0] * cms["task"]["m"]
    for position in (0, 2, 19):  # what vectors.REPORTS sets for the cms task
        bits[position] = 1
    sent = json.loads(cms["batch_body"])["reports"][0]["bits"]
    assert ic.b64url(ic.pack_bits(bits)) == sent
    assert base64.urlsafe_b64decode(sent + "=") == bytes([0b10100000, 0, 0b00010000])


POPULATION = {
    "grr": ["red"] * 500 + ["grün"] * 300 + ["🔵"] * 200,
    "cms": ["hello"] * 500 + ["naïve"] * 300 + ["😂"] * 200,
    "hcms": ["hello"] * 500 + ["naïve"] * 300 + ["😂"] * 200,
    "olh": ["hello"] * 500 + ["naïve"] * 300 + ["😂"] * 200,
    "rr": [True] * 700 + [False] * 300,
    "oue": ["red"] * 500 + ["grün"] * 300 + ["🔵"] * 200,
    "ss": ["red"] * 500 + ["grün"] * 300 + ["🔵"] * 200,
}
TASK_SPECS = {
    "grr": {"epsilon": 4.0, "domain": ["red", "grün", "🔵", "gelb"]},
    "cms": {"epsilon": 8.0, "k": 64, "m": 256},
    "hcms": {"epsilon": 6.0, "k": 64, "m": 256},
    "olh": {"epsilon": 6.0, "k": 64},
    "rr": {"epsilon": 3.0},
    "oue": {"epsilon": 3.0, "domain": ["red", "grün", "🔵", "gelb", "lila", "rosa"]},
    "ss": {"epsilon": 1.0, "domain": ["red", "grün", "🔵", "gelb", "lila", "rosa"]},
}


@pytest.mark.timeout(180)
def test_the_collector_counts_the_independent_clients_reports(tmp_path: Path) -> None:
    server = start_server(tmp_path / "protocol.sqlite3")
    try:
        for mechanism, spec in TASK_SPECS.items():
            task_id = f"indep-{mechanism}"
            created = requests.post(
                f"{server.url}/v1/tasks",
                headers=bearer(ADMIN),
                timeout=10,
                json={"task_id": task_id, "mechanism": mechanism, "min_batch_size": 10, **spec},
            )
            assert created.status_code == 201, created.text
            task = ic.get_task(server.url, task_id)  # checks the fingerprint
            values = POPULATION[mechanism]
            reports = [
                ic.envelope(task, time.time(), ic.PRIVATIZE[mechanism](task, v)) for v in values
            ]
            for start in range(0, len(reports), 400):
                answer = ic.upload(server.url, task_id, reports[start : start + 400])
                assert answer["rejected"] == [] and answer["accepted"] == len(
                    reports[start : start + 400]
                )
            truth = Counter(values)
            candidates = None if mechanism in ("rr", "grr", "oue", "ss") else sorted(truth)
            body = {} if candidates is None else {"candidates": candidates}
            estimates = requests.post(
                f"{server.url}/v1/tasks/{task_id}/estimates",
                headers=bearer(ANALYST),
                json=body,
                timeout=30,
            ).json()
            assert estimates["n"] == len(values)
            for row in estimates["estimates"]:
                value = row["value"]
                expected = truth[
                    True if value in (True, "yes") else False if value in (False, "no") else value
                ]
                # 4.5 standard errors: a correct client fails this with probability < 1e-4.
                assert abs(row["estimate"] - expected) <= 4.5 * row["std_error"] + 1e-9, (
                    mechanism,
                    row,
                    expected,
                )
    finally:
        server.kill()


@pytest.mark.parametrize(
    "spec",
    [
        {"method": "sw", "scale": "log", "lo": 1.0, "hi": 5000.0, "buckets": 64, "epsilon": 2.0},
        {"method": "sw", "scale": "linear", "lo": 0.0, "hi": 1.0, "buckets": 16, "epsilon": 2.0},
        {
            "method": "1bit",
            "scale": "linear",
            "lo": 0.0,
            "hi": 100.0,
            "buckets": 50,
            "epsilon": 1.0,
        },
    ],
)
def test_the_independent_numeric_client_is_the_implementation(spec: dict[str, Any]) -> None:
    """PROTOCOL.md §3.8 and shared/ give the same report from the same words, always."""
    task = TaskConfig.create(task_id="n", mechanism="numeric", **spec)
    mechanism = task.mechanism_object
    rng = np.random.default_rng(17)
    values = [*rng.lognormal(2.5, 1.5, 400).tolist(), spec["lo"], spec["hi"], 1e9, -5.0]
    for value in values:
        bucket = ic.numeric_bucket(task.to_dict(), value)
        assert bucket == mechanism.bucket_of(value)  # type: ignore[attr-defined]
        words = rng.integers(0, 2**32, size=3).tolist()
        used = getattr(mechanism, "used_words", 2**32)
        if used < 2**32:
            words[0] = 2**32 - 1  # past the used range: both must draw again
        ours = ic.numeric_output(task.to_dict(), bucket, iter(words).__next__)
        first_used = next(w for w in words if w < used)
        theirs = mechanism._from_words(np.array([bucket]), np.array([first_used]))  # type: ignore[attr-defined]
        assert ours == int(theirs[0])
