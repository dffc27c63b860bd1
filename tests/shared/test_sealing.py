"""Sealed reports (ldp_telemetry.shared.sealing, PROTOCOL.md §10): round trips, what the seal binds,
padding.

The published opening vector (OPEN_VECTOR, also in PROTOCOL.md) pins the wire layout
(base64url of HPKE's enc ‖ ciphertext, info as RFC 8785 JSON, the padded plaintext) so a
second implementation can check its `open` against it; sealing itself is randomized.
"""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from ldp_telemetry.client.budget import device_key
from ldp_telemetry.shared import TaskConfig
from ldp_telemetry.shared.codec import (
    Envelope,
    decode_batch,
    encode_report,
    new_report_id,
    open_sealed,
)
from ldp_telemetry.shared.errors import DecodeError, ParameterError
from ldp_telemetry.shared.sealing import (
    PAD_BLOCK,
    SUITE_IDS,
    SealKey,
    info,
    new_private_key,
    open_report,
    padded,
    private_key_from_bytes,
    public_key_bytes,
    seal_report,
)
from ldp_telemetry.shared.wire import b64decode, b64encode
from protocol.cases import TASKS

ROOT = Path(__file__).resolve().parents[2]
SECRET = bytes(32)
OPEN_VECTOR: dict[str, Any] = {
    "task_id": "vector-task",
    "private_key": bytes(range(32)).hex(),
    "seal": {
        "kem": 32,
        "kdf": 1,
        "aead": 3,
        "key_id": "vector-key-1",
        "public_key": "j0DFrbaPJWJK5bIU6nZ6bslNgp09e14a0bpvPiE4KF8",
    },
    "sealed_report": {
        "report_id": "AAECAwQFBgcICQoLDA0ODw",
        "fingerprint": "0123456789abcdef0123456789abcdef",
        "time": 1700006400,
        "key_id": "vector-key-1",
        "sealed": "zqeK3bZD9eWKiPzFc4MsEJgDujebtLVGXieeS1AzVFkeru1rAz8sD3On-NKrS0dSV_pmCSNhkwnBRGCJ"
        "kVPH5MmD5v4uIRCpdDF8-8V3Ia0TU7wpQHsrJh1qRLvZeKnM",
    },
    "info": '{"fingerprint":"0123456789abcdef0123456789abcdef","key_id":"vector-key-1",'
    '"label":"ldp-telemetry/seal/1","report_id":"AAECAwQFBgcICQoLDA0ODw",'
    '"task_id":"vector-task","time":1700006400}',
    "plaintext": '{"row":3,"bits":"gQBg"}' + " " * 25,
    "opened": {
        "report_id": "AAECAwQFBgcICQoLDA0ODw",
        "fingerprint": "0123456789abcdef0123456789abcdef",
        "time": 1700006400,
        "row": 3,
        "bits": "gQBg",
    },
}


def _vector_keys() -> dict[str, Any]:
    return {"vector-key-1": private_key_from_bytes(bytes.fromhex(OPEN_VECTOR["private_key"]))}


def test_the_published_vector_opens() -> None:
    vector = OPEN_VECTOR
    keys = _vector_keys()
    assert SealKey.from_json(vector["seal"]).public_key == public_key_bytes(keys["vector-key-1"])
    report = vector["sealed_report"]
    bound = info(
        vector["task_id"], report["fingerprint"], report["key_id"], report["report_id"], 1700006400
    )
    assert bound.decode() == vector["info"]
    assert padded({"row": 3, "bits": "gQBg"}).decode() == vector["plaintext"]
    assert open_report(vector["task_id"], report, keys) == vector["opened"]
    # enc (32 bytes) ‖ ciphertext of the padded plaintext ‖ tag (16 bytes)
    raw = b64decode(report["sealed"], len(report["sealed"]) * 3 // 4, "sealed")
    assert len(raw) == 32 + len(vector["plaintext"]) + 16


def test_protocol_md_publishes_the_vector() -> None:
    text = (ROOT / "PROTOCOL.md").read_text(encoding="utf-8")
    for needle in (OPEN_VECTOR["seal"]["public_key"], OPEN_VECTOR["info"], "vector-key-1"):
        assert needle in text
    sealed = OPEN_VECTOR["sealed_report"]["sealed"]  # split over two lines there
    assert sealed in "".join(text.split())


@pytest.mark.parametrize(
    "field, value",
    [
        ("report_id", b64encode(bytes(16))),  # a ciphertext replayed under another id
        ("time", 1700006400 + 86400),
        ("fingerprint", "f" * 32),
    ],
)
def test_a_ciphertext_moved_to_another_envelope_does_not_open(field: str, value: Any) -> None:
    moved = {**OPEN_VECTOR["sealed_report"], field: value}
    with pytest.raises(DecodeError) as caught:
        open_report(OPEN_VECTOR["task_id"], moved, _vector_keys())
    assert caught.value.reason == "sealed_invalid"


def test_another_task_or_a_flipped_bit_does_not_open() -> None:
    report = OPEN_VECTOR["sealed_report"]
    with pytest.raises(DecodeError) as caught:
        open_report("other-task", report, _vector_keys())
    assert caught.value.reason == "sealed_invalid"
    raw = bytearray(b64decode(report["sealed"], len(report["sealed"]) * 3 // 4, "sealed"))
    raw[40] ^= 1
    with pytest.raises(DecodeError) as caught:
        open_report(
            OPEN_VECTOR["task_id"], {**report, "sealed": b64encode(bytes(raw))}, _vector_keys()
        )
    assert caught.value.reason == "sealed_invalid"


def test_an_unknown_or_wrong_key() -> None:
    report = OPEN_VECTOR["sealed_report"]
    with pytest.raises(DecodeError) as caught:
        open_report(OPEN_VECTOR["task_id"], report, {})
    assert caught.value.reason == "unknown_seal_key"
    other = {"vector-key-1": new_private_key()}  # the id is held, but not this key
    with pytest.raises(DecodeError) as caught:
        open_report(OPEN_VECTOR["task_id"], report, other)
    assert caught.value.reason == "sealed_invalid"


@pytest.mark.parametrize(
    "sealed, reason",
    [
        ("", "sealed_invalid"),
        ("abc", "sealed_invalid"),  # 2 bytes: shorter than enc and tag
        ("abcde", "invalid_message"),  # no base64url length
        (None, "invalid_message"),
        ("A" * 70_000, "invalid_message"),
    ],
)
def test_malformed_ciphertexts_are_refused_with_a_reason(sealed: Any, reason: str) -> None:
    with pytest.raises(DecodeError) as caught:
        open_report(
            OPEN_VECTOR["task_id"],
            {**OPEN_VECTOR["sealed_report"], "sealed": sealed},
            _vector_keys(),
        )
    assert caught.value.reason == reason


@pytest.mark.parametrize(
    "changes",
    [{"time": 2**60}, {"report_id": "\ud800" * 22}, {"time": True}, {"fingerprint": None}],
)
def test_an_envelope_that_cannot_be_bound_is_invalid(changes: dict[str, Any]) -> None:
    report = {**OPEN_VECTOR["sealed_report"], **changes}
    with pytest.raises(DecodeError) as caught:
        open_report(OPEN_VECTOR["task_id"], report, _vector_keys())
    assert caught.value.reason == "invalid_message"


@pytest.mark.parametrize("plaintext", [b"[" * 40_000, b"not json", b'"a string"', b'{"time": 1}'])
def test_a_sealed_payload_that_is_no_payload_object_is_invalid(plaintext: bytes) -> None:
    """Anyone holding the public key can seal anything: what opens is checked too."""
    from cryptography.hazmat.primitives.hpke import AEAD, KDF, KEM, Suite

    report = dict(OPEN_VECTOR["sealed_report"])
    bound = OPEN_VECTOR["info"].encode()
    public = _vector_keys()["vector-key-1"].public_key()
    sealed = Suite(KEM.X25519, KDF.HKDF_SHA256, AEAD.CHACHA20_POLY1305).encrypt(
        plaintext, public, bound
    )
    report["sealed"] = b64encode(sealed)
    with pytest.raises(DecodeError) as caught:
        open_report(OPEN_VECTOR["task_id"], report, _vector_keys())
    assert caught.value.reason == "invalid_message"


def _sealed_by_hand(plaintext: bytes) -> dict[str, Any]:
    """Return the vector's envelope around ``plaintext`` sealed to the vector's key."""
    from cryptography.hazmat.primitives.hpke import AEAD, KDF, KEM, Suite

    report = dict(OPEN_VECTOR["sealed_report"])
    public = _vector_keys()["vector-key-1"].public_key()
    sealed = Suite(KEM.X25519, KDF.HKDF_SHA256, AEAD.CHACHA20_POLY1305).encrypt(
        plaintext, public, OPEN_VECTOR["info"].encode()
    )
    return {**report, "sealed": b64encode(sealed)}


@pytest.mark.parametrize(
    "plaintext",
    [
        b'{"row":3,"bits":"gQBg"}',  # not padded: 23 bytes tell the relay the row's width
        b'{"row":3,"bits":"gQBg"}' + b" " * 9,  # padded to 32: numbers counted as they are
        b'{"row":3,"bits":"gQBg"}' + b" " * 41,  # one block too many
        b'{"row":3,"bits":"gQBg"}' + b" " * 24,  # characters, not the 16-byte block
    ],
)
def test_a_wrongly_padded_plaintext_is_refused(plaintext: bytes) -> None:
    """§10 (1.1): the length is the relay's view, so only the rule's length is accepted."""
    with pytest.raises(DecodeError) as caught:
        open_report(OPEN_VECTOR["task_id"], _sealed_by_hand(plaintext), _vector_keys())
    assert caught.value.reason == "sealed_padding"
    assert "48" in str(caught.value)  # the length the rule gives, so the sealer can fix it


def test_the_rules_padding_opens_in_any_key_order_and_spacing() -> None:
    """Only the length is checked: key order and JSON whitespace inside are the sealer's."""
    for text in (b'{"bits":"gQBg","row":3}', b'{"row": 3, "bits": "gQBg"}'):
        report = _sealed_by_hand(text.ljust(48, b" "))
        opened = open_report(OPEN_VECTOR["task_id"], report, _vector_keys())
        assert opened["row"] == 3 and opened["bits"] == "gQBg"


def test_seal_key_json_is_checked() -> None:
    good = OPEN_VECTOR["seal"]
    assert SealKey.from_json(good).to_json() == good
    for bad in (
        {**good, "aead": 1},  # AES-128-GCM: not our suite
        {**good, "kem": 32.0},
        {**good, "public_key": "short"},
        {**good, "key_id": "no spaces"},
        {k: v for k, v in good.items() if k != "kdf"},
        [good],
    ):
        with pytest.raises(ParameterError):
            SealKey.from_json(bad)
    assert SUITE_IDS == {"kem": 0x20, "kdf": 0x01, "aead": 0x03}


CASE_INPUTS = ("values", "words", "dimension_values")  # a vector case's inputs, not task fields


def _sealed_task(name: str, key: SealKey) -> TaskConfig:
    spec = {k: v for k, v in TASKS[name].items() if k not in (*CASE_INPUTS, "sealed")}
    return TaskConfig(task_id=name, sealed=True, seal=key, **spec)


@pytest.mark.parametrize("name", sorted(TASKS))
def test_every_kind_round_trips_and_its_ciphertext_length_is_constant(name: str) -> None:
    """The ciphertext's length tells nothing: every report of a task is as long."""
    private = new_private_key()
    key = SealKey("k1", public_key_bytes(private))
    task = _sealed_task(name, key)
    mechanism = task.mechanism_object.for_device(device_key(SECRET, task))
    lengths = set()
    reports, envelopes = [], []
    for value in itertools.islice(itertools.cycle(TASKS[name]["values"]), 60):
        envelope = Envelope(
            new_report_id(), task.fingerprint, task.floor_time(1.7e9), mechanism.privatize(value)
        )
        wire = encode_report(task, envelope)
        clear = {"dims"} if task.dimensions is not None else set()  # §11: dims in the clear
        assert set(wire) == {"report_id", "fingerprint", "time", "key_id", "sealed", *clear}
        lengths.add(len(wire["sealed"]))
        reports.append(wire)
        envelopes.append(envelope)
    assert len(lengths) == 1, lengths
    decoded, rejected = decode_batch(task, {"reports": reports}, {"k1": private})
    assert not rejected and [e.report_id for e in decoded] == [e.report_id for e in envelopes]
    plain = TaskConfig(
        task_id=name, **{k: v for k, v in TASKS[name].items() if k not in (*CASE_INPUTS, "sealed")}
    )
    for got, sent in zip(decoded, envelopes, strict=True):
        assert json.dumps(plain.mechanism_object.encode_payload(got.payload)) == json.dumps(
            plain.mechanism_object.encode_payload(sent.payload)
        )


def test_padding_counts_numbers_at_their_widest() -> None:
    short, wide = padded({"index": 7}), padded({"index": -(2**53)})
    assert len(short) == len(wide) and len(short) % PAD_BLOCK == 0
    assert json.loads(short) == {"index": 7}  # trailing spaces are JSON whitespace
    assert len(padded({"indices": [1, 2, 3]})) == len(padded({"indices": [10**9, 2, 10**15]}))


def test_a_sealed_task_fingerprints_sealed_but_not_its_key() -> None:
    key_a = SealKey("a", public_key_bytes(new_private_key()))
    key_b = SealKey("b", public_key_bytes(new_private_key()))
    spec: dict[str, Any] = {"task_id": "t", "mechanism": "rr", "epsilon": 1.0}
    plain, sealed_a = TaskConfig(**spec), TaskConfig(**spec, sealed=True, seal=key_a)
    sealed_b = TaskConfig(**spec, sealed=True, seal=key_b)
    assert '"sealed":true' in sealed_a.canonical_form() and "sealed" not in plain.canonical_form()
    assert plain.fingerprint != sealed_a.fingerprint == sealed_b.fingerprint
    served = sealed_a.to_dict()
    assert served["seal"] == key_a.to_json()
    again = TaskConfig.from_dict(served)
    assert again.seal == key_a and again.sealed
    with pytest.raises(ParameterError):
        TaskConfig(**spec, seal=key_a)  # a key on a plain task
    with pytest.raises(ParameterError):
        TaskConfig(**spec, sealed=1)  # an int, not a bool


def test_a_sealed_task_refuses_plain_reports_and_a_plain_task_sealed_ones() -> None:
    private = new_private_key()
    key = SealKey("k", public_key_bytes(private))
    sealed = TaskConfig(task_id="t", mechanism="rr", epsilon=1.0, sealed=True, seal=key)
    plain = TaskConfig(task_id="t", mechanism="rr", epsilon=1.0)
    envelope = Envelope(new_report_id(), plain.fingerprint, 0, True)
    plain_wire = encode_report(plain, envelope)
    with pytest.raises(DecodeError) as caught:
        open_sealed(sealed, {**plain_wire, "fingerprint": sealed.fingerprint}, {"k": private})
    assert caught.value.reason == "invalid_message" and "sealed reports only" in str(caught.value)
    sealed_wire = encode_report(sealed, Envelope(new_report_id(), sealed.fingerprint, 0, True))
    _, rejected = decode_batch(
        plain, {"reports": [{**sealed_wire, "fingerprint": plain.fingerprint}]}
    )
    assert [r.reason for r in rejected] == ["invalid_message"]


def test_sealing_twice_gives_two_ciphertexts() -> None:
    key = SealKey("k", public_key_bytes(new_private_key()))
    report = copy.deepcopy(OPEN_VECTOR["opened"])
    assert seal_report("t", key, report)["sealed"] != seal_report("t", key, report)["sealed"]


def test_a_key_id_never_starts_like_an_option(monkeypatch: pytest.MonkeyPatch) -> None:
    from ldp_telemetry.shared import sealing

    draws = iter([b"\xf8" + bytes(8), bytes(9)])  # the first encodes to "-...": drawn again
    monkeypatch.setattr(sealing.os, "urandom", lambda _: next(draws))
    assert sealing.new_key_id() == "AAAAAAAAAAAA"
