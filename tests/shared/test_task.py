"""TaskConfig: validation of every field, JSON round trips and the fingerprint."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

import numpy as np
import pytest
import rfc8785

from ldp_telemetry.shared import (
    CountMeanSketch,
    GeneralizedRandomizedResponse,
    HadamardCountMeanSketch,
    ParameterError,
    RandomizedResponse,
    TaskConfig,
)
from ldp_telemetry.shared.task import PROTOCOL_VERSION, DerivedMismatch

VALID: dict[str, dict[str, Any]] = {
    "rr": {"task_id": "t-rr", "mechanism": "rr", "epsilon": 1.0},
    "rr-alpha-beta": {"task_id": "t-rr2", "mechanism": "rr", "alpha": 0.5, "beta": 0.5},
    "grr": {"task_id": "t.grr", "mechanism": "grr", "epsilon": 2.0, "domain": ["x", "y", "z"]},
    "cms": {
        "task_id": "T_cms",
        "mechanism": "cms",
        "epsilon": 4.0,
        "k": 16,
        "m": 100,
        "hash_seed": 9,
    },
    "hcms": {
        "task_id": "0hcms",
        "mechanism": "hcms",
        "epsilon": 4.0,
        "k": 16,
        "m": 128,
        "hash_seed": 9,
        "time_precision": 3600,
        "min_batch_size": 10,
    },
}
MECHANISM_TYPES = {
    "rr": RandomizedResponse,
    "rr-alpha-beta": RandomizedResponse,
    "grr": GeneralizedRandomizedResponse,
    "cms": CountMeanSketch,
    "hcms": HadamardCountMeanSketch,
}


@pytest.mark.parametrize("name", sorted(VALID))
def test_tasks_round_trip_through_json(name: str) -> None:
    task = TaskConfig.create(**VALID[name])
    data = json.loads(json.dumps(task.to_dict()))
    assert data["effective_epsilon"] == task.effective_epsilon <= task.asked_epsilon
    again = TaskConfig.from_dict(data)
    assert again == task and again.fingerprint == task.fingerprint
    assert isinstance(task.mechanism_object, MECHANISM_TYPES[name])
    assert task.mechanism_object is task.mechanism_object  # built once


def test_create_draws_a_random_hash_seed_for_sketches_only() -> None:
    params = {k: v for k, v in VALID["cms"].items() if k != "hash_seed"}
    seeds = {TaskConfig.create(**params).hash_seed for _ in range(20)}
    assert len(seeds) > 15 and all(0 <= s < 2**32 for s in seeds)
    assert TaskConfig.create(**VALID["rr"]).hash_seed is None


def test_fingerprint_covers_every_parameter() -> None:
    base = TaskConfig.create(**VALID["hcms"])
    changes: dict[str, Any] = {
        "task_id": "other",
        "epsilon": 4.5,
        "k": 8,
        "m": 64,
        "hash_seed": 10,
        "time_precision": 60,
        "min_batch_size": 11,
    }
    prints = {base.fingerprint}
    for field, value in changes.items():
        prints.add(dataclasses.replace(base, fingerprint="", **{field: value}).fingerprint)
    assert len(prints) == len(changes) + 1
    grr = TaskConfig.create(**VALID["grr"])
    reordered = TaskConfig.create(**{**VALID["grr"], "domain": ["y", "x", "z"]})
    assert grr.fingerprint != reordered.fingerprint  # the index of a value is on the wire


def test_integer_and_float_epsilon_fingerprint_alike() -> None:
    as_int = TaskConfig.create(**{**VALID["cms"], "epsilon": 4})
    assert as_int.fingerprint == TaskConfig.create(**VALID["cms"]).fingerprint
    assert isinstance(as_int.epsilon, float)


def test_a_tampered_task_is_refused() -> None:
    data = TaskConfig.create(**VALID["cms"]).to_dict()
    with pytest.raises(ParameterError, match="fingerprint does not match"):
        TaskConfig.from_dict({**data, "epsilon": 8.0})
    with pytest.raises(ParameterError, match="fingerprint does not match"):
        TaskConfig.from_dict({**data, "fingerprint": "0" * 32})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"task_id": ""}, "task_id must be 1-64"),
        ({"task_id": "-leading-dash"}, "task_id must be 1-64"),
        ({"task_id": "x" * 65}, "task_id must be 1-64"),
        ({"task_id": "has space"}, "task_id must be 1-64"),
        ({"task_id": "slash/id"}, "task_id must be 1-64"),
        ({"task_id": "newline\n"}, "task_id must be 1-64"),  # regression: "$" matched before \n
        ({"task_id": 5}, "task_id must be 1-64"),
        ({"mechanism": "laplace"}, "mechanism must be one of rr, grr, cms, hcms"),
        ({"mechanism": None}, "mechanism must be one of"),
        ({"k": 4}, "rr takes no k"),
        ({"domain": ["a", "b"]}, "rr takes no domain"),
        ({"time_precision": 0}, "time_precision must be in"),
        ({"time_precision": 86_400.0}, "time_precision must be an integer"),
        ({"min_batch_size": 0}, "min_batch_size must be in"),
        ({"epsilon": None}, "give epsilon, or both alpha and beta"),
        ({"epsilon": "1"}, "epsilon must be a number"),
        ({"alpha": 0.5, "beta": 0.5}, "not both"),
        ({"fingerprint": "f" * 32}, "fingerprint does not match"),
    ],
)
def test_bad_rr_task_fields_are_refused(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        TaskConfig.create(**{**VALID["rr"], **change})


@pytest.mark.parametrize(
    ("name", "change", "message"),
    [
        ("grr", {"domain": None}, "grr needs a domain"),
        ("grr", {"domain": "xyz"}, "domain must be a list"),  # regression: became ('x','y','z')
        ("grr", {"domain": 3}, "domain must be a list"),
        ("grr", {"domain": ["x", "x"]}, "distinct"),
        ("grr", {"alpha": 0.5}, "alpha and beta are only for rr"),
        ("grr", {"epsilon": None}, "grr needs epsilon"),
        ("cms", {"m": None}, "cms needs m"),
        ("cms", {"k": None, "m": None}, "cms needs k, m"),
        ("cms", {"domain": ["a", "b"]}, "cms takes no domain"),
        ("cms", {"k": 0}, "k must be in"),
        ("hcms", {"m": 100}, "power of two"),
        ("hcms", {"hash_seed": -1}, "hash_seed must be in"),
    ],
)
def test_bad_task_fields_are_refused(name: str, change: dict[str, Any], message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        TaskConfig(**{**VALID[name], **change})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "a task must be a JSON object"),
        ({**VALID["rr"], "colour": "red"}, "unknown task fields: colour"),
        ({"mechanism": "rr", "epsilon": 1.0}, "a task needs task_id"),
        ({"epsilon": 1.0}, "a task needs task_id and mechanism"),
    ],
)
def test_from_dict_refuses_unknown_and_missing_fields(data: Any, message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        TaskConfig.from_dict(data)


def test_create_refuses_unknown_fields_with_a_parameter_error() -> None:
    # Regression: an unknown keyword raised the constructor's TypeError.
    with pytest.raises(ParameterError, match="unknown task fields: upload_key"):
        TaskConfig.create(**VALID["rr"], upload_key="x")
    with pytest.raises(ParameterError, match="unknown task fields: effective_epsilon"):
        TaskConfig.create(**VALID["rr"], effective_epsilon=1.0)


@pytest.mark.parametrize(
    ("precision", "when", "floor"),
    [
        (86_400, 1_700_000_000.7, 1_699_920_000),
        (3600, 7199.99, 3600),
        (1, 12.9, 12),
        (86_400, -1, -86_400),
        (60, 0, 0),
    ],
)
def test_floor_time(precision: int, when: float, floor: int) -> None:
    task = TaskConfig.create(**{**VALID["rr"], "time_precision": precision})
    assert task.floor_time(when) == floor


def test_numpy_scalars_are_stored_as_plain_numbers() -> None:
    # Regression: np.int64 k or np.float32 epsilon made the fingerprint's json.dumps fail.
    reference = TaskConfig.create(**VALID["hcms"])
    task = TaskConfig.create(
        **{
            **VALID["hcms"],
            "k": np.int64(16),
            "m": np.uint16(128),
            "hash_seed": np.uint32(9),
            "epsilon": np.float32(4.0),
            "time_precision": np.int32(3600),
        }
    )
    assert task == reference and task.fingerprint == reference.fingerprint
    assert type(task.k) is int and type(task.epsilon) is float
    json.dumps(task.to_dict())
    with pytest.raises(ParameterError, match="must be an integer"):
        TaskConfig.create(**{**VALID["hcms"], "k": np.bool_(True)})


# -- Protocol 1.0: RFC 8785 fingerprints, the protocol version, derived integers ----------


def test_the_fingerprint_is_sha256_of_the_rfc8785_form() -> None:
    task = TaskConfig.create(**VALID["grr"] | {"domain": ["ä", "😂", "\x7f"]})
    served = task.to_dict()
    fields = {
        k: v
        for k, v in served.items()
        if k not in ("fingerprint", "effective_epsilon", "attack_success")
    }
    canonical = rfc8785.dumps(fields)
    assert task.canonical_form().encode() == canonical
    assert task.fingerprint == hashlib.sha256(canonical).hexdigest()[:32]
    assert b'"epsilon":2,' in canonical and "😂".encode() in canonical  # JCS, not repr


def test_a_client_that_reparses_numbers_reproduces_the_fingerprint() -> None:
    """JavaScript's JSON.parse keeps no int/float distinction: neither does the fingerprint."""
    numeric = {"task_id": "n", "mechanism": "numeric", "epsilon": 1, "lo": 0, "hi": 1000}
    task = TaskConfig.create(**numeric)
    as_doubles = json.loads(json.dumps(task.to_dict()), parse_int=float)
    assert isinstance(as_doubles["buckets"], float)
    fields = {k: v for k, v in as_doubles.items() if k not in ("fingerprint", "effective_epsilon")}
    assert hashlib.sha256(rfc8785.dumps(fields)).hexdigest()[:32] == task.fingerprint


@pytest.mark.parametrize("name", sorted(VALID))
def test_the_task_publishes_its_protocol_and_derived_integers(name: str) -> None:
    served = TaskConfig.create(**VALID[name]).to_dict()
    assert served["protocol"] == PROTOCOL_VERSION == "1.0"
    for value in served["derived"].values():
        for number in value if isinstance(value, list) else [value]:
            assert type(number) is int and 0 <= number < 2**32


def test_a_task_whose_derived_integers_disagree_is_refused() -> None:
    data = TaskConfig.create(**VALID["cms"]).to_dict()
    wrong = {**data, "derived": {"T": data["derived"]["T"] + 1}}
    with pytest.raises(DerivedMismatch, match="derived integers"):
        TaskConfig.from_dict(wrong)


def test_a_task_of_another_protocol_is_refused() -> None:
    data = TaskConfig.create(**VALID["rr"]).to_dict()
    with pytest.raises(ParameterError, match=r"protocol '2\.0'"):
        TaskConfig.from_dict({**data, "protocol": "2.0"})


def test_the_collectors_policy_fields_are_served_but_not_fingerprinted() -> None:
    task = TaskConfig.create(**VALID["hcms"])
    served = {**task.to_dict(), "upload_key_required": True, "archive": True}
    assert TaskConfig.from_dict(served).fingerprint == task.fingerprint


def test_a_task_kept_before_protocol_1_0_is_refingerprinted() -> None:
    task = TaskConfig.create(**VALID["cms"])
    old = {k: v for k, v in task.to_dict().items() if k not in ("protocol", "derived")}
    old["fingerprint"] = "0" * 32  # what Python's repr gave: not reproducible now
    with pytest.raises(ParameterError, match="fingerprint"):
        TaskConfig.from_dict(old)
    assert TaskConfig.from_stored(old).fingerprint == task.fingerprint
