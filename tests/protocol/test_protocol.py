"""PROTOCOL.md holds: the published vectors (protocol/vectors.json) are what the
implementation generates, and a client written from PROTOCOL.md alone reproduces them and
is accepted and counted correctly by the collector."""

from __future__ import annotations

import ast
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import requests

from ldp_telemetry.shared import TaskConfig
from protocol import generate
from tests.protocol import independent_client as ic
from tests.protocol import independent_dimensions as idim
from tests.protocol import independent_longitudinal as il
from tests.protocol import independent_sealing as sealing
from tests.support.servers import ADMIN, ANALYST, bearer, start_server

HERE = Path(__file__).resolve().parent

VECTORS: dict[str, Any] = json.loads(generate.FILE.read_text(encoding="utf-8"))
PROJECT_PACKAGES = {
    "shared",
    "client",
    "aggregator",
    "simulations",
    "benchmarks",
    "demo",
    "protocol",
}


def test_the_published_vectors_are_what_the_implementation_generates() -> None:
    """Bit for bit: the committed file is a fresh generation's text."""
    assert generate.text() == generate.FILE.read_text(encoding="utf-8"), (
        "the protocol changed: if on purpose, run python -m protocol.generate --write "
        "--force and say so in PROTOCOL.md"
    )


def test_protocol_md_publishes_the_vectors_file() -> None:
    text = (HERE.parents[1] / "PROTOCOL.md").read_text(encoding="utf-8")
    assert "protocol/vectors.json" in text and f"Protocol {VECTORS['protocol']}" in text


@pytest.mark.parametrize(
    "module",
    [
        "independent_client.py",
        "independent_longitudinal.py",
        "independent_sealing.py",
        "independent_dimensions.py",
    ],
)
def test_the_independent_client_imports_nothing_of_the_project(module: str) -> None:
    tree = ast.parse((HERE / module).read_text())
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
        "collections",
        "hmac",
        "unicodedata",
        "mmh3",
        "rfc8785",
        "cryptography",  # §10's HPKE, for sealed tasks
        "independent_client",  # the longitudinal and sealing parts build on its §3
        "independent_dimensions",  # §11, which the client checks tasks with
        "re",
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
    for case in VECTORS["canonical_json"]:
        assert ic.rfc8785.dumps(json.loads(case["json"])).decode() == case["canonical"]
    for case in VECTORS["tasks"]:
        task = case["task"]
        assert ic.fingerprint(task) == case["fingerprint"], task["task_id"]
        assert ic.device_key(bytes(range(32)), task["task_id"]).hex() == case["device_key"]
        if "epsilon" in task and task["mechanism"] != "hh":  # not alpha/beta, not ε∞
            assert ic.own_derived(task) == case["derived"], task["task_id"]
    for case in VECTORS["drbg"]:
        generate_bytes = il.drbg(bytes.fromhex(case["seed_material"]))
        for call in case["calls"]:
            assert generate_bytes(call["bytes"]).hex() == call["output"]


def test_the_independent_client_makes_the_vectors_reports(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Fixed words in, the exact report out: §3's rules, for the kinds the client has."""
    for case in VECTORS["tasks"]:
        task = case["task"]
        if "longitudinal" in task or task["mechanism"] not in ic.PRIVATIZE:
            continue
        for vector in case["reports"]:
            words = iter(vector["words"])
            monkeypatch.setattr(ic, "word", words.__next__)
            monkeypatch.setattr(ic, "below", lambda n, words=words: _below(words, n))
            report = ic.PRIVATIZE[task["mechanism"]](task, vector["value"])
            assert report == vector["report"], (task["task_id"], vector["value"])
            envelope = {
                "report_id": ic.b64url(bytes(range(16))),
                "fingerprint": task["fingerprint"],
                "time": VECTORS["time"],
                **report,
            }
            if "dimensions" in task:  # §11: the app's values mapped, then the slice
                envelope = idim.report(envelope, task, vector["dimensions"])
                assert envelope["dims"] == vector["dims"], vector["dimensions"]
                assert idim.slice_index(task, envelope["dims"]) == vector["slice"]
            if task.get("sealed"):  # randomized: the padded plaintext and what info binds
                assert sealing.plaintext(report).decode() == vector["plaintext"]
                clear = {
                    k: envelope[k]
                    for k in ("report_id", "fingerprint", "time", "dims")
                    if k in envelope
                }
                bound = sealing.seal_info(task["task_id"], task["seal"]["key_id"], clear)
                assert bound.decode() == vector["info"]
                continue
            wire = json.dumps({"reports": [envelope]}, separators=(",", ":"), ensure_ascii=False)
            assert wire == vector["wire"]


def _below(words: Any, n: int) -> int:
    """§3: one word at a time, the first below 2^32 − 2^32 mod n, mod n."""
    for r in words:
        if r < 2**32 - 2**32 % n:
            return int(r % n)
    raise AssertionError("the vector gives too few words")


def test_the_independent_client_derives_the_permanent_responses() -> None:
    for case in VECTORS["tasks"]:
        task = case["task"]
        if task["mechanism"] != "cms" or "longitudinal" not in task:
            continue
        prr = case["prr"]
        assert (
            il.prr_seed(bytes(range(32)), task, prr["value"].encode()).hex()
            == (prr["seed_material"])
        )
        assert il.permanent_cms(task, bytes(range(32)), prr["value"]) == prr["permanent_response"]


def test_the_independent_client_pads_as_the_vectors_do() -> None:
    """§10 (1.1): one padded plaintext per payload shape, and each sealed report's."""
    shapes = set()
    for case in VECTORS["padding"]:
        padded = sealing.plaintext(case["payload"])
        assert padded.decode() == case["plaintext"] and len(padded) == case["padded_length"]
        shapes.add(tuple(case["payload"]))
    assert len(shapes) == 8  # bit; index; row+index; row+bits; row+col+bit; level+…; bits; indices
    sealed = [c for c in VECTORS["tasks"] if c["task"].get("sealed")]
    assert sealed and all("wire" not in r for c in sealed for r in c["reports"])
    for case in sealed:
        assert ic.fingerprint(case["task"]) == case["fingerprint"]  # `seal` is not hashed
        for vector in case["reports"]:
            assert sealing.plaintext(vector["report"]).decode() == vector["plaintext"]


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
        refused = requests.post(  # the served fast path reads LDP-Protocol too
            f"{server.url}/v1/tasks/indep-rr/reports",
            data=b'{"reports": []}',
            headers={"Content-Type": "application/json", "LDP-Protocol": "2.0"},
            timeout=10,
        )
        assert refused.status_code == 400 and "unsupported_protocol" in refused.json()["type"]
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
        assert bucket == mechanism.bucket_of(value)
        words = rng.integers(0, 2**32, size=3).tolist()
        used = getattr(mechanism, "used_words", 2**32)
        if used < 2**32:
            words[0] = 2**32 - 1  # past the used range: both must draw again
        ours = ic.numeric_output(task.to_dict(), bucket, iter(words).__next__)
        first_used = next(w for w in words if w < used)
        theirs = mechanism._from_words(np.array([bucket]), np.array([first_used]))
        assert ours == int(theirs[0])


def test_the_independent_client_makes_the_hh_and_longitudinal_reports(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """§3.7 (levels, NFC, items) and §3.9 (PRR by the DRBG, then the IRR's fresh words)."""
    secret = bytes.fromhex(VECTORS["device_secret"])
    checked = 0
    for case in VECTORS["tasks"]:
        task = case["task"]
        hh = task["mechanism"] == "hh"
        if not hh and not (task["mechanism"] == "cms" and "longitudinal" in task):
            continue
        if hh:
            assert ic.hh_levels(task) == {k: case["derived"][k] for k in ("levels", "level_seeds")}
        for vector in case["reports"]:
            words = iter(vector["words"])
            monkeypatch.setattr(ic, "word", words.__next__)
            monkeypatch.setattr(il, "word", words.__next__)  # il imports ic's word by name
            monkeypatch.setattr(ic, "below", lambda n, words=words: _below(words, n))
            if hh:
                report = ic.hh(task, vector["value"], secret)
            else:
                permanent = il.permanent_cms(task, secret, vector["value"])
                report = il.reflip_cms(permanent, task["m"], task["derived"]["T_i"])
            assert report == vector["report"], (task["task_id"], vector["value"])
            checked += 1
    assert checked >= 8


def test_the_independent_client_makes_the_loloha_reports(monkeypatch: pytest.MonkeyPatch) -> None:
    """§3.13: g and T, the device's row and the bucket's permanent response by the DRBG, then
    one fresh word of instantaneous response: every LOLOHA vector, bit for bit."""
    secret = bytes.fromhex(VECTORS["device_secret"])
    checked = 0
    for case in VECTORS["tasks"]:
        task = case["task"]
        if task.get("longitudinal", {}).get("variant") != "loloha":
            continue
        assert task["protocol"] == "1.1"
        assert il.loloha_derived(task) == case["derived"]
        prr = case["prr"]
        assert il.loloha_row(task, secret) == prr["row"]["row"]
        assert (
            il.prr_seed(secret, task, prr["bucket"].to_bytes(4, "big")).hex()
            == (prr["seed_material"])
        )
        assert il.permanent_loloha(task, secret, prr["value"]) == prr["permanent_response"]
        for vector in case["reports"]:
            words = iter(vector["words"])
            monkeypatch.setattr(il, "word", words.__next__)
            permanent = il.permanent_loloha(task, secret, vector["value"])
            report = il.reflip_loloha(permanent, task["derived"]["g"], task["derived"]["T_i"])
            assert report == vector["report"], (task["task_id"], vector["value"])
            checked += 1
    assert checked >= 6


def test_the_independent_client_makes_the_longitudinal_one_bit_reports(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """§3.9 for numeric 1bit (protocol 1.1): the bucket's permanent bit, then one fresh word."""
    secret = bytes.fromhex(VECTORS["device_secret"])
    checked = 0
    for case in VECTORS["tasks"]:
        task = case["task"]
        if task["mechanism"] != "numeric" or "longitudinal" not in task:
            continue
        assert task["protocol"] == "1.1"
        prr = case["prr"]
        assert il.permanent_one_bit(task, secret, prr["value"]) == prr["permanent_response"]
        for vector in case["reports"]:
            words = iter(vector["words"])
            monkeypatch.setattr(il, "word", words.__next__)
            permanent = il.permanent_one_bit(task, secret, vector["value"])
            report = il.reflip_one_bit(permanent, task["derived"]["T_i"])
            assert report == vector["report"], (task["task_id"], vector["value"])
            checked += 1
    assert checked == 3
