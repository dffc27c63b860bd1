"""The OpenAPI document against real answers: every answer this module provokes (estimates
of several kinds, heavy hitters, uploads with rejections, problems) is validated against
the schema its path, method and status are documented with, objects closed (a field the
schema lacks fails), and every field the answers' schemas document must turn up in some
answer (a field no answer has fails too). The answers' schemas are derived from their
types (ldp_telemetry.aggregator.api.schemas), so this checks the types against the code."""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from ldp_telemetry.aggregator import create_app
from ldp_telemetry.aggregator.api.resources import get_store_of
from ldp_telemetry.aggregator.api.schemas import ANSWERS
from ldp_telemetry.aggregator.core.auth import hash_token
from ldp_telemetry.shared import Envelope, TaskConfig, encode_batch, new_report_id
from ldp_telemetry.shared.contract import PROTOCOL_HEADER, REJECTION_REASONS
from ldp_telemetry.shared.wire import b64encode
from tests.support.servers import ADMIN, ANALYST, bearer

SHUFFLER = "shuffler-token"
TASKS = {
    "rr": {"mechanism": "rr", "epsilon": 1.0},
    "sh": {  # its reports come through a shuffler only
        "mechanism": "rr",
        "epsilon": 1.0,
        "dimensions": [{"name": "platform", "values": ["android", "ios"]}],
    },
    "grr": {
        "mechanism": "grr",
        "epsilon": 1.0,
        "domain": ["a", "b", "c"],
        "dimensions": [{"name": "platform", "values": ["android", "ios"]}],
    },
    "cms": {"mechanism": "cms", "epsilon": 2.0, "k": 16, "m": 64},
    "lt": {
        "mechanism": "cms",
        "k": 16,
        "m": 64,
        "longitudinal": {"epsilon_inf": 2.0, "flip": 0.1},
        "dimensions": [{"name": "platform", "values": ["android", "ios"]}],
    },
    "num": {"mechanism": "numeric", "epsilon": 2.0, "lo": 0, "hi": 100, "buckets": 16},
    "hh": {
        "mechanism": "hh",
        "epsilon": 4.0,
        "k": 16,
        "m": 64,
        "alphabet": "ab",
        "max_length": 4,
        "dimensions": [{"name": "platform", "values": ["android", "ios"]}],
    },
    "shh": {  # heavy hitters through a shuffler only
        "mechanism": "hh",
        "epsilon": 4.0,
        "k": 16,
        "m": 64,
        "alphabet": "ab",
        "max_length": 4,
        "dimensions": [{"name": "platform", "values": ["android", "ios"]}],
    },
    # Breakdowns (docs/breakdowns.md): slices 0 android, 1 ios, 2 other.
    "by": {
        "mechanism": "cms",
        "epsilon": 2.0,
        "k": 16,
        "m": 64,
        "min_batch_size": 50,
        "dimensions": [{"name": "platform", "values": ["android", "ios"]}],
    },
    "numd": {
        "mechanism": "numeric",
        "epsilon": 2.0,
        "lo": 0,
        "hi": 100,
        "buckets": 16,
        "min_batch_size": 50,
        "dimensions": [{"name": "platform", "values": ["android", "ios"]}],
    },
}


class Checked:
    """The answers seen, each validated against the document as it arrives."""

    def __init__(self, client: FlaskClient) -> None:
        self.client = client
        self.document = client.get("/v1/openapi.json").get_json()
        self.seen: dict[str, list[Any]] = {name: [] for name in ANSWERS}

    def __call__(self, template: str, method: str, response: TestResponse) -> Any:
        """Validate an answer against its documented response; return its JSON."""
        responses = self.document["paths"][template][method.lower()]["responses"]
        documented = responses.get(str(response.status_code))
        assert documented is not None, (template, method, response.status_code, response.data)
        if "$ref" in documented:
            documented = self._resolve(documented["$ref"])
        schema = documented["content"][response.mimetype]["schema"]
        body, name = response.get_json(), schema.get("$ref", "").rpartition("/")[2]
        if name in self.seen:  # an answer typed once: closed, it lists every field it has
            jsonschema.validate(body, {**self.document, **closed(self._resolve(schema["$ref"]))})
            self.seen[name].append(body)
        else:  # a task's fields follow its mechanism: the document lists the common ones
            jsonschema.validate(body, {**self.document, **schema})
        return body

    def _resolve(self, ref: str) -> Any:
        found = self.document
        for part in ref.removeprefix("#/").split("/"):
            found = found[part]
        return found


def closed(schema: Any) -> Any:
    """Return a copy of a schema whose objects with listed properties allow no other."""
    schema = copy.deepcopy(schema)

    def close(node: Any) -> None:
        if isinstance(node, dict):
            if "properties" in node:
                node.setdefault("additionalProperties", False)
            for value in node.values():
                close(value)
        elif isinstance(node, list):
            for value in node:
                close(value)

    close(schema)
    return schema


def fields_documented(schema: dict[str, Any], prefix: str = "") -> set[str]:
    """Return every property path a schema documents (``estimates[].reliable``)."""
    found: set[str] = set()
    for name, field in schema.get("properties", {}).items():
        found.add(prefix + name)
        found |= fields_documented(field, f"{prefix}{name}.")
        if "items" in field:
            found |= fields_documented(field["items"], f"{prefix}{name}[].")
    return found


def fields_present(body: Any, prefix: str = "") -> set[str]:
    """Return every property path an answer holds."""
    found: set[str] = set()
    if isinstance(body, dict):
        for name, value in body.items():
            found.add(prefix + name)
            found |= fields_present(value, f"{prefix}{name}.")
    elif isinstance(body, list):
        for item in body:
            found |= fields_present(item, prefix.removesuffix(".") + "[].")
    return found


@pytest.fixture
def client(tmp_path: Path) -> Iterator[FlaskClient]:
    app = create_app(
        {
            "TESTING": True,
            "DATABASE": str(tmp_path / "answers.sqlite3"),
            "ADMIN_TOKEN": ADMIN,
            "ANALYST_TOKEN": ANALYST,
            "QUOTA_RATE": 1,
            "QUOTA_BURST": 5_000,
        }
    )
    get_store_of(app).add_token(hash_token(SHUFFLER), "shuffler")
    yield app.test_client()


def create(check: Checked, task_id: str, fields: dict[str, Any]) -> TaskConfig:
    response = check.client.post(
        "/v1/tasks", json={"task_id": task_id, **fields}, headers=bearer(ADMIN)
    )
    body = check("/v1/tasks", "POST", response)
    assert response.status_code == 201, body
    body.pop("upload_key", None)
    body.pop("archive", None)
    return TaskConfig.from_dict(body)


def reports(task: TaskConfig, values: list[Any], seed: int, slices: int = 1) -> list[Envelope]:
    """Return privatized reports of ``values``; report i in slice i % ``slices``."""
    batch: Any = task.mechanism_object.privatize_many(values, np.random.default_rng(seed))
    payloads = [
        batch.report(i) if hasattr(batch, "report") else batch[i].item() for i in range(len(values))
    ]
    bucket = task.floor_time(time.time())
    return [
        Envelope(new_report_id(), task.fingerprint, bucket, p, i % slices)
        for i, p in enumerate(payloads)
    ]


def upload(check: Checked, task: TaskConfig, body: bytes, **headers: str) -> Any:
    response = check.client.post(
        f"/v1/tasks/{task.task_id}/reports",
        data=body,
        headers={"Content-Type": "application/json", **headers},
    )
    return check("/v1/tasks/{task_id}/reports", "POST", response)


def ask(check: Checked, task_id: str, what: str, **query: Any) -> Any:
    response = check.client.post(f"/v1/tasks/{task_id}/{what}", json=query, headers=bearer(ANALYST))
    return check("/v1/tasks/{task_id}/" + what, "POST", response)


def test_real_answers_match_the_documented_schemas(client: FlaskClient) -> None:
    check = Checked(client)
    rng = np.random.default_rng(7)
    tasks = {name: create(check, name, fields) for name, fields in TASKS.items()}
    values = {
        "rr": [bool(b) for b in rng.integers(0, 2, 400)],
        "sh": [],
        "shh": [],
        "grr": list(rng.choice(["a", "b", "c"], 400)),
        "cms": list(rng.choice(["x", "y", "z"], 400)),
        "lt": list(rng.choice(["x", "y"], 400)),
        "num": list(rng.uniform(0, 100, 400)),
        "hh": list(rng.choice(["ab", "ba", "abab"], 400)),
        "by": list(rng.choice(["x", "y", "z"], 400)),
        # A point mass on each platform: no percentile of it can be trusted.
        "numd": [40.0, 60.0] * 200,
    }
    for name, task in tasks.items():
        if not values[name]:
            continue
        sent = reports(task, values[name], seed=len(name), slices=2 if name == "numd" else 1)
        if name == "by":  # android and ios 200 each; other 20: thin
            sent = reports(task, values[name], seed=2, slices=2)
            sent += reports(task, ["x"] * 20, seed=3)
            sent = [*sent[:-20], *(replace(e, slice=2) for e in sent[-20:])]
        if name == "hh":  # 20 of them on ios: a thin slice
            sent = [*sent[:-20], *(replace(e, slice=1) for e in sent[-20:])]
        assert upload(check, task, encode_batch(task, sent))["accepted"] == len(sent)

    # Rejections: a replay, an outdated fingerprint, a malformed report.
    rr = tasks["rr"]
    again = reports(rr, [True], seed=1)
    upload(check, rr, encode_batch(rr, again))
    stale = Envelope(new_report_id(), "0" * 32, again[0].time, 1)
    body = encode_batch(rr, [*again, stale])[:-2] + b',{"report_id":"x"}]}'
    rejected = upload(check, rr, body)["rejected"]
    assert {r["reason"] for r in rejected} <= set(REJECTION_REASONS) and len(rejected) == 3

    # A shuffled batch: the estimates of its task then carry a central epsilon.
    sh, batch_id = tasks["sh"], b64encode(bytes(16))
    put = client.put(
        f"/v1/tasks/sh/shuffled/{batch_id}?uploads=200&slice_counts=0:100,1:100",
        data=encode_batch(sh, reports(sh, [True, False] * 100, seed=3, slices=2)),
        headers={**bearer(SHUFFLER), "Content-Type": "application/json"},
    )
    check("/v1/tasks/{task_id}/shuffled/{batch_id}", "PUT", put)
    assert ask(check, "sh", "estimates")["central_epsilon"] > 0
    assert ask(check, "sh", "estimates", group_by=["platform"])["slices"][0]["lifetime"]
    words = list(rng.choice(["ab", "ba", "abab"], 400))
    put = client.put(
        f"/v1/tasks/shh/shuffled/{batch_id}?uploads=400&slice_counts=0:200,1:200",
        data=encode_batch(tasks["shh"], reports(tasks["shh"], words, seed=5, slices=2)),
        headers={**bearer(SHUFFLER), "Content-Type": "application/json"},
    )
    assert put.status_code == 200, put.get_data(as_text=True)
    assert ask(check, "shh", "heavy-hitters", top=3, group_by=["platform"])["lifetime"]
    empty = ask(check, "rr", "estimates", start=0, end=1)  # no report there: a 422
    assert empty["type"].endswith(":below_min_batch_size")

    ask(check, "rr", "estimates", fake_fraction=0.01)
    ask(check, "grr", "estimates", normalize=True)
    ask(check, "cms", "estimates", candidates=["x", "y", "w"])
    ask(check, "lt", "estimates", candidates=["x"])
    ask(check, "num", "estimates")
    ask(check, "hh", "estimates", candidates=["ab"])
    ask(check, "hh", "heavy-hitters", top=3)
    # Breakdowns: rows, a thin group rolled up, a selection too thin for any row.
    ask(check, "by", "estimates", candidates=["x", "y"], group_by=["platform"], fake_fraction=0.1)
    ask(check, "by", "estimates", candidates=["x"], where={"platform": "other"})
    ask(check, "lt", "estimates", candidates=["x"], group_by=["platform"])
    ask(check, "grr", "estimates", normalize=True, group_by=["platform"])
    ask(check, "numd", "estimates", candidates=["mean", "p50"], group_by=["platform"])
    ask(check, "hh", "heavy-hitters", top=3, group_by=["platform"])
    ask(check, "hh", "heavy-hitters", top=3, where={"platform": "ios"})
    ask(check, "by", "compare", candidates=["x", "y"], a={"where": {"platform": "android"}},
        b={"where": {"platform": "ios"}})  # fmt: skip
    ask(check, "numd", "compare", candidates=["mean", "p50"], a={"where": {"platform": "android"}},
        b={"where": {"platform": "ios"}})  # fmt: skip

    # Problems, each answered with the problem document.
    ask(check, "rr", "heavy-hitters")  # 422: rr cannot discover
    ask(check, "nowhere", "estimates")  # 404 unknown_task
    ask(check, "rr", "estimates", candidates="x")  # 400 invalid_query
    upload(check, rr, b"{", **{PROTOCOL_HEADER: "9.0"})  # 400 unsupported_protocol
    upload(check, rr, b"x" * (4 * 2**20 + 1))  # 413 body_too_large
    upload(check, rr, encode_batch(rr, reports(rr, [True] * 5_000, seed=4)))  # 429 quota
    check("/v1/tasks", "POST", client.post("/v1/tasks", json={}, headers=bearer(ANALYST)))

    observed = {
        name: set().union(*map(fields_present, bodies)) for name, bodies in check.seen.items()
    }
    schemas = check.document["components"]["schemas"]
    for name in ANSWERS:
        missing = fields_documented(schemas[name]) - observed[name]
        assert not missing, f"{name} documents fields no answer here has: {sorted(missing)}"
