"""The wire codec: golden bytes, hypothesis round trips and a table of malformed reports."""

from __future__ import annotations

import base64
import copy
import json
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldp_telemetry.shared import (
    DecodeError,
    Envelope,
    HadamardReport,
    Rejection,
    SketchReport,
    TaskConfig,
    decode_batch,
    decode_report,
    encode_batch,
    encode_report,
    new_report_id,
)
from ldp_telemetry.shared.wire import b64decode, try_b64decode

TASKS = {
    "rr": TaskConfig(task_id="golden-rr", mechanism="rr", epsilon=1.0),
    "grr": TaskConfig(task_id="golden-grr", mechanism="grr", epsilon=2.0, domain=("a", "b", "c")),
    "cms": TaskConfig(
        task_id="golden-cms", mechanism="cms", epsilon=3.0, k=4, m=12, hash_seed=1234
    ),
    "hcms": TaskConfig(
        task_id="golden-hcms",
        mechanism="hcms",
        epsilon=3.0,
        k=4,
        m=16,
        hash_seed=1234,
        time_precision=3600,
    ),
}
PAYLOADS: dict[str, list[Any]] = {
    "rr": [1, 0],
    "grr": [2, 0],
    "cms": [SketchReport(3, bytes([0b10110010, 0b01010000])), SketchReport(0, b"\xff\xf0")],
    "hcms": [HadamardReport(3, 15, 1), HadamardReport(0, 0, 0)],
}
ID_A, ID_B = bytes(range(16)), bytes(range(255, 239, -1))
TIME_A, TIME_B = 1_700_006_400, 1_700_006_400 - 3 * 86_400


GOLDEN = {  # the exact bytes every client must send for golden_envelopes(name)
    "cms": (
        b'{"reports":[{"report_id":"AAECAwQFBgcICQoLDA0ODw","fingerprint":"819cea0d1f9c9'
        b'15dede41d07cc8109d8","time":1700006400,"row":3,"bits":"slA"},{"report_id":"__7'
        b'9_Pv6-fj39vX08_Lx8A","fingerprint":"819cea0d1f9c915dede41d07cc8109d8","time":1'
        b'699747200,"row":0,"bits":"__A"}]}'
    ),
    "grr": (
        b'{"reports":[{"report_id":"AAECAwQFBgcICQoLDA0ODw","fingerprint":"986418514dee9'
        b'89979964d14ba215fc9","time":1700006400,"index":2},{"report_id":"__79_Pv6-fj39v'
        b'X08_Lx8A","fingerprint":"986418514dee989979964d14ba215fc9","time":1699747200,"'
        b'index":0}]}'
    ),
    "hcms": (
        b'{"reports":[{"report_id":"AAECAwQFBgcICQoLDA0ODw","fingerprint":"c5aa83799c07c'
        b'8c4571b12e295dfbdb4","time":1700006400,"row":3,"col":15,"bit":1},{"report_id":'
        b'"__79_Pv6-fj39vX08_Lx8A","fingerprint":"c5aa83799c07c8c4571b12e295dfbdb4","tim'
        b'e":1699747200,"row":0,"col":0,"bit":0}]}'
    ),
    "rr": (
        b'{"reports":[{"report_id":"AAECAwQFBgcICQoLDA0ODw","fingerprint":"efb170fc34397'
        b'14239f9020232396bf7","time":1700006400,"bit":1},{"report_id":"__79_Pv6-fj39vX0'
        b'8_Lx8A","fingerprint":"efb170fc3439714239f9020232396bf7","time":1699747200,"bi'
        b't":0}]}'
    ),
}


def golden_envelopes(name: str) -> list[Envelope]:
    task = TASKS[name]
    first, second = PAYLOADS[name]
    return [
        Envelope(ID_A, task.fingerprint, TIME_A, first),
        Envelope(ID_B, task.fingerprint, TIME_B, second),
    ]


@pytest.mark.parametrize("name", sorted(TASKS))
def test_encode_batch_golden_bytes(name: str) -> None:
    task = TASKS[name]
    assert encode_batch(task, golden_envelopes(name)) == GOLDEN[name]
    accepted, rejected = decode_batch(task, json.loads(GOLDEN[name]))
    assert accepted == golden_envelopes(name) and rejected == []


def test_new_report_ids_are_16_fresh_bytes() -> None:
    ids = {new_report_id() for _ in range(1000)}
    assert len(ids) == 1000 and all(len(i) == 16 for i in ids)


# ---------------------------------------------------------------- round trips


@st.composite
def envelopes(draw: st.DrawFn, name: str) -> Envelope:
    task = TASKS[name]
    k, m = task.k or 1, task.m or 2
    payload: Any
    if name == "rr":
        payload = draw(st.integers(0, 1))
    elif name == "grr":
        payload = draw(st.integers(0, 2))
    elif name == "cms":
        bits = np.array(draw(st.lists(st.integers(0, 1), min_size=m, max_size=m)), np.uint8)
        payload = SketchReport(draw(st.integers(0, k - 1)), np.packbits(bits).tobytes())
    else:
        payload = HadamardReport(
            draw(st.integers(0, k - 1)), draw(st.integers(0, m - 1)), draw(st.integers(0, 1))
        )
    time = draw(st.integers(0, 2**40)) * task.time_precision
    report_id = draw(st.binary(min_size=16, max_size=16))
    return Envelope(report_id, task.fingerprint, time, payload)


@pytest.mark.parametrize("name", sorted(TASKS))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_batches_round_trip(name: str, data: st.DataObject) -> None:
    task = TASKS[name]
    batch = data.draw(st.lists(envelopes(name), min_size=1, max_size=5))
    accepted, rejected = decode_batch(task, json.loads(encode_batch(task, batch)))
    assert accepted == batch and rejected == []
    assert [decode_report(task, encode_report(task, e)) for e in batch] == batch


@pytest.mark.parametrize("name", sorted(TASKS))
def test_privatized_reports_round_trip(name: str) -> None:
    task, rng = TASKS[name], np.random.default_rng(5)
    examples: dict[str, list[Any]] = {"rr": [True, False], "grr": ["a", "c"]}
    values = examples.get(name, ["x", "y"])
    batch = [
        Envelope(new_report_id(), task.fingerprint, TIME_A, task.mechanism_object.privatize(v, rng))
        for v in values
    ]
    accepted, _ = decode_batch(task, json.loads(encode_batch(task, batch)))
    assert accepted == batch


# ---------------------------------------------------------------- malformed reports

Mutation = Callable[[dict[str, Any]], Any]


def _set(field: str, value: Any) -> Mutation:
    return lambda report: {**report, field: value}


def _drop(field: str) -> Mutation:
    return lambda report: {k: v for k, v in report.items() if k != field}


COMMON: list[tuple[str, Mutation, str, str]] = [
    ("not an object", lambda r: [r], "invalid_message", "JSON object"),
    ("null report", lambda r: None, "invalid_message", "JSON object"),
    ("missing report_id", _drop("report_id"), "invalid_message", "missing ['report_id']"),
    ("missing time", _drop("time"), "invalid_message", "missing ['time']"),
    ("extra field", _set("value", "secret"), "invalid_message", "unexpected ['value']"),
    (
        "report_id truncated",
        _set("report_id", "AAECAwQFBgcICQoLDA0OD"),
        "invalid_message",
        "report_id must be 16 bytes",
    ),
    (
        "report_id 32 bytes",
        _set("report_id", "A" * 43),
        "invalid_message",
        "report_id must be 16 bytes",
    ),
    (
        "report_id bad base64",
        _set("report_id", "AAECAwQFBgcICQoLDA0O!w"),
        "invalid_message",
        "report_id is not valid base64url",
    ),
    (
        "report_id padded",
        _set("report_id", "AAECAwQFBgcICQoLDA0O=="),
        "invalid_message",
        "report_id",
    ),
    (
        "report_id padding bits set",
        _set("report_id", "AAECAwQFBgcICQoLDA0ODx"),
        "invalid_message",
        "canonical base64url",
    ),
    (
        "report_id standard alphabet",
        _set("report_id", "+/79_Pv6-fj39vX08_Lx8A"),
        "invalid_message",
        "not valid base64url",
    ),
    (
        "report_id non-ascii",
        _set("report_id", "AAECAwQFBgcICQoLDA0Oé"),
        "invalid_message",
        "report_id",
    ),
    ("report_id an integer", _set("report_id", 7), "invalid_message", "report_id"),
    (
        "wrong fingerprint",
        _set("fingerprint", "0" * 32),
        "outdated_config",
        "another version of this task",
    ),
    (
        "fingerprint not a string",
        _set("fingerprint", ["x"]),
        "invalid_message",
        "fingerprint must be a string",
    ),
    ("time not floored", _set("time", TIME_A + 1), "invalid_message", "floored"),
    ("time negative", _set("time", -86_400), "invalid_message", "time must be in"),
    ("time a float", _set("time", float(TIME_A)), "invalid_message", "time must be an integer"),
    ("time a bool", _set("time", True), "invalid_message", "time must be an integer"),
    ("time a string", _set("time", str(TIME_A)), "invalid_message", "time must be an integer"),
]
SPECIFIC: dict[str, list[tuple[str, Mutation, str, str]]] = {
    "rr": [
        ("bit 2", _set("bit", 2), "invalid_message", "bit must be in [0, 1]"),
        ("bit a bool", _set("bit", True), "invalid_message", "bit must be an integer"),
        ("bit a string", _set("bit", "1"), "invalid_message", "bit must be an integer"),
        (
            "index instead of bit",
            lambda r: {**_drop("bit")(r), "index": 1},
            "invalid_message",
            "missing ['bit']",
        ),
    ],
    "grr": [
        ("index out of domain", _set("index", 3), "invalid_message", "index must be in [0, 2]"),
        ("index negative", _set("index", -1), "invalid_message", "index must be in [0, 2]"),
        ("index a bool", _set("index", False), "invalid_message", "index must be an integer"),
    ],
    "cms": [
        ("row out of range", _set("row", 4), "invalid_message", "row must be in [0, 3]"),
        ("row negative", _set("row", -1), "invalid_message", "row must be in [0, 3]"),
        ("row a float", _set("row", 1.0), "invalid_message", "row must be an integer"),
        ("bits truncated", _set("bits", "sl"), "invalid_message", "bits must be 2 bytes"),
        ("bits too long", _set("bits", "slAA"), "invalid_message", "bits must be 2 bytes"),
        ("bits bad base64", _set("bits", "s*A"), "invalid_message", "bits is not valid"),
        ("bits non-canonical", _set("bits", "slB"), "invalid_message", "canonical"),
        ("bits padding set", _set("bits", "slE"), "invalid_message", "padding bits must be 0"),
        ("bits a list", _set("bits", [1, 0]), "invalid_message", "bits must be 2 bytes"),
        ("missing bits", _drop("bits"), "invalid_message", "missing ['bits']"),
    ],
    "hcms": [
        ("row out of range", _set("row", 4), "invalid_message", "row must be in [0, 3]"),
        ("col out of range", _set("col", 16), "invalid_message", "col must be in [0, 15]"),
        ("col negative", _set("col", -1), "invalid_message", "col must be in [0, 15]"),
        ("bit 2", _set("bit", 2), "invalid_message", "bit must be in [0, 1]"),
        ("bit a bool", _set("bit", True), "invalid_message", "bit must be an integer"),
        (
            "cms fields",
            lambda r: {**_drop("col")(r), "bits": "AA"},
            "invalid_message",
            "missing ['col'], unexpected ['bits']",
        ),
    ],
}
MALFORMED = [
    pytest.param(name, *case, id=f"{name}-{case[0]}")
    for name in sorted(TASKS)
    for case in COMMON + SPECIFIC[name]
]


@pytest.mark.parametrize(("name", "what", "mutate", "reason", "message"), MALFORMED)
def test_malformed_reports_are_rejected_with_their_reason(
    name: str, what: str, mutate: Mutation, reason: str, message: str
) -> None:
    task = TASKS[name]
    valid = json.loads(GOLDEN[name])["reports"][0]
    bad = mutate(copy.deepcopy(valid))
    with pytest.raises(DecodeError) as raised:
        decode_report(task, bad)
    assert raised.value.reason == reason
    assert message in str(raised.value)
    accepted, rejected = decode_batch(task, {"reports": [valid, bad]})
    assert len(accepted) == 1 and len(rejected) == 1
    assert rejected[0].reason == reason and message in rejected[0].message


def test_a_rejection_echoes_a_string_report_id_only() -> None:
    task = TASKS["rr"]
    valid = json.loads(GOLDEN["rr"])["reports"][0]
    bad_time = {**valid, "time": 1}
    long_id = {**valid, "report_id": "x" * 65}
    _, rejected = decode_batch(task, {"reports": [bad_time, long_id, 5, {**valid, "report_id": 3}]})
    assert [r.report_id for r in rejected] == [valid["report_id"], None, None, None]
    assert all(isinstance(r, Rejection) and r.reason == "invalid_message" for r in rejected)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([], "JSON object"),
        ("reports", "JSON object"),
        (None, "JSON object"),
        ({}, "JSON object"),
        ({"reports": {}}, "JSON object"),
        ({"reports": "[]"}, "JSON object"),
        ({"reports": []}, "at least one report"),
        ({"reports": [{}], "extra": 1}, "unexpected batch fields: ['extra']"),
    ],
)
def test_malformed_batches_raise(body: Any, message: str) -> None:
    with pytest.raises(DecodeError, match=message.replace("[", r"\[").replace("]", r"\]")) as e:
        decode_batch(TASKS["rr"], body)
    assert e.value.reason == "invalid_message"


def test_reports_are_checked_against_their_own_task() -> None:
    cms_report = json.loads(GOLDEN["cms"])["reports"][0]
    with pytest.raises(DecodeError, match="report fields do not match"):
        decode_report(TASKS["hcms"], cms_report)
    other = TaskConfig(
        task_id="golden-cms", mechanism="cms", epsilon=3.0, k=4, m=12, hash_seed=1235
    )  # same shape, other hashes: must not be mixed
    with pytest.raises(DecodeError) as raised:
        decode_report(other, cms_report)
    assert raised.value.reason == "outdated_config"


def test_numpy_integers_in_payloads_encode_as_json_numbers() -> None:
    # Regression: a payload built from a batch's arrays (np.int64 row) raised TypeError.
    hcms, cms = TASKS["hcms"], TASKS["cms"]
    envelope = Envelope(
        ID_A,
        hcms.fingerprint,
        np.int64(TIME_A),
        HadamardReport(np.int64(3), np.int64(15), np.uint8(1)),
    )
    assert encode_batch(hcms, [envelope]) == encode_batch(hcms, golden_envelopes("hcms")[:1])
    sketch = SketchReport(np.int64(3), PAYLOADS["cms"][0].bits)
    encoded = encode_report(cms, Envelope(ID_A, cms.fingerprint, TIME_A, sketch))
    assert decode_report(cms, json.loads(json.dumps(encoded))) == golden_envelopes("cms")[0]


# ---------------------------------------------------------------- the plain-report path

URLSAFE = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
ODD = ["+", "/", "=", "é", " ", "\n", "\ud800"]  # what base64url never holds


@st.composite
def base64ish(draw: st.DrawFn) -> tuple[str, int]:
    """Return (text, size): base64url of about the length ``size`` bytes take, at times
    with one character base64url never holds."""
    size = draw(st.sampled_from([1, 2, 16, 17, 128]))
    width = (4 * size + 2) // 3 + draw(st.sampled_from([0, 0, 0, 0, -1, 1]))
    chars = draw(st.lists(st.sampled_from(URLSAFE), min_size=width, max_size=width))
    if chars and draw(st.booleans()):
        chars[draw(st.integers(0, width - 1))] = draw(st.sampled_from(ODD))
    return "".join(chars), size


def canonical_base64url(text: str, size: int) -> bytes | None:
    """Return what a canonical base64url string of ``size`` bytes holds, else None (an
    oracle apart from ldp_telemetry.shared.wire: canonical means re-encoding gives the string
    back)."""
    if len(text) != (4 * size + 2) // 3 or not re.fullmatch("[A-Za-z0-9_-]+", text):
        return None
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    return raw if base64.urlsafe_b64encode(raw).rstrip(b"=").decode() == text else None


@settings(max_examples=600, deadline=None)
@given(case=base64ish())
def test_base64url_decoding_accepts_canonical_strings_only(case: tuple[str, int]) -> None:
    # The upload path decodes through try_b64decode (None: b64decode then says why): both
    # must accept exactly the canonical strings, or a refusal's message would change.
    text, size = case
    expected = canonical_base64url(text, size)
    assert try_b64decode(text, size) == expected
    if expected is None:
        with pytest.raises(DecodeError):
            b64decode(text, size, "x")
    else:
        assert b64decode(text, size, "x") == expected
