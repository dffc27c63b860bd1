"""Sealed reports: a report's payload encrypted to the collector's HPKE key (PROTOCOL.md §10).

A task created with ``sealed: true`` takes reports whose mechanism payload is encrypted
with HPKE (RFC 9180), base mode, one suite: DHKEM(X25519, HKDF-SHA256) (KEM id 0x0020),
HKDF-SHA256 (KDF id 0x0001), ChaCha20-Poly1305 (AEAD id 0x0003). A shuffler between the
devices and the collector then sees only ciphertext. The envelope stays readable — report
id, fingerprint and time (what a shuffler batches by and the collector refuses replays
and late reports by), a dimensions task's ``dims`` (public: a shuffler counts reports per
slice) and the ``key_id`` that names the collector key — and HPKE's ``info`` binds all of
them with the task id, so a ciphertext moved to another report id, time, slice, task or
key does not open (``sealed_invalid``); a key the collector no longer holds is
``unknown_seal_key``; a plaintext not padded to :func:`padded_length` (protocol 1.1) is
``sealed_padding``.

Pure: no I/O. The collector's private keys are kept by :mod:`aggregator.sealing_keys`;
this module only seals (device) and opens (collector) with keys it is handed.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.hpke import AEAD, KDF, KEM, Suite

from ldp_telemetry.shared.contract import SEALED_INVALID, SEALED_PADDING, UNKNOWN_SEAL_KEY
from ldp_telemetry.shared.errors import DecodeError, ParameterError
from ldp_telemetry.shared.wire import b64decode, b64encode, canonical_json

__all__ = [
    "INFO_LABEL",
    "SEALED_FIELDS",
    "SUITE_IDS",
    "SealKey",
    "info",
    "new_key_id",
    "new_private_key",
    "open_report",
    "padded",
    "padded_length",
    "private_key_bytes",
    "private_key_from_bytes",
    "public_key_bytes",
    "seal_report",
    "sealable",
]

SUITE_IDS = {"kem": 0x0020, "kdf": 0x0001, "aead": 0x0003}  # IANA HPKE registry ids
INFO_LABEL = "ldp-telemetry/seal/1"
SEALED_FIELDS = ("key_id", "sealed")  # a sealed report's fields besides the common ones
CLEAR_FIELDS = ("report_id", "fingerprint", "time", "dims")  # never sealed (dims: if any)
KEY_BYTES = 32  # an X25519 key, public or private, raw
ENC_BYTES = 32  # HPKE's encapsulated key for DHKEM(X25519)
TAG_BYTES = 16  # ChaCha20-Poly1305's tag
MAX_SEALED_CHARS = 64 * 1024  # base64url; far above any mechanism's payload
PAD_BLOCK = 16  # bytes; the padded plaintext is a multiple of it
MAX_SCALAR_CHARS = 24  # the widest JSON number or literal a payload holds ("-2.2e-308"-like)
KEY_ID = re.compile(r"[A-Za-z0-9_-]{1,32}")
_SUITE = Suite(KEM.X25519, KDF.HKDF_SHA256, AEAD.CHACHA20_POLY1305)


@dataclass(frozen=True)
class SealKey:
    """The collector's public key a sealed task publishes as ``seal``."""

    key_id: str
    public_key: bytes  # raw X25519, 32 bytes

    def __post_init__(self) -> None:
        if not isinstance(self.key_id, str) or not KEY_ID.fullmatch(self.key_id):
            raise ParameterError("seal.key_id must be 1-32 characters of A-Z a-z 0-9 - _")
        if not isinstance(self.public_key, bytes) or len(self.public_key) != KEY_BYTES:
            raise ParameterError(f"seal.public_key must be {KEY_BYTES} bytes")

    def to_json(self) -> dict[str, Any]:
        """Return the task's ``seal`` object."""
        return {**SUITE_IDS, "key_id": self.key_id, "public_key": b64encode(self.public_key)}

    @classmethod
    def from_json(cls, obj: Any) -> SealKey:
        """Return the key a task's ``seal`` object publishes, or raise ParameterError."""
        if not isinstance(obj, dict) or set(obj) != {*SUITE_IDS, "key_id", "public_key"}:
            raise ParameterError(
                "seal must be an object {kem, kdf, aead, key_id, public_key} (PROTOCOL.md §10)"
            )
        suite = {name: obj[name] for name in SUITE_IDS}
        if suite != SUITE_IDS or any(type(v) is not int for v in suite.values()):
            raise ParameterError(
                f"seal names the HPKE suite {suite}; this implementation seals with "
                f"{SUITE_IDS} only (DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, ChaCha20-Poly1305)"
            )
        try:
            public = b64decode(obj["public_key"], KEY_BYTES, "seal.public_key")
        except DecodeError as error:
            raise ParameterError(str(error)) from None
        return cls(obj["key_id"], public)


def info(
    task_id: str,
    fingerprint: str,
    key_id: str,
    report_id: str,
    time: int,
    dims: Mapping[str, Any] | None = None,
) -> bytes:
    """Return HPKE's ``info`` for one report: RFC 8785 JSON of what the seal binds
    (``dims`` only for a task that declares dimensions, so 1.0 reports bind what they did)."""
    bound: dict[str, Any] = {
        "fingerprint": fingerprint,
        "key_id": key_id,
        "label": INFO_LABEL,
        "report_id": report_id,
        "task_id": task_id,
        "time": time,
        **({"dims": dims} if dims is not None else {}),
    }
    return canonical_json(bound).encode("utf-8")


def seal_report(task_id: str, key: SealKey, report: Mapping[str, Any]) -> dict[str, Any]:
    """Return a plain report's JSON object with its payload sealed to ``key``.

    ``report`` holds report_id, fingerprint, time, ``dims`` for a dimensions task (left in
    the clear) and the mechanism's payload fields; the payload fields (compact JSON, UTF-8)
    become the plaintext. HPKE draws its ephemeral key
    from the OS CSPRNG, so sealing the same report twice gives two ciphertexts: a device
    seals once and queues the result (a retry resends the same bytes).
    """
    envelope = {name: report[name] for name in CLEAR_FIELDS if name in report}
    payload = {name: value for name, value in report.items() if name not in envelope}
    plaintext = padded(payload)
    bound = info(
        task_id,
        envelope["fingerprint"],
        key.key_id,
        envelope["report_id"],
        envelope["time"],
        envelope.get("dims"),
    )
    sealed = _SUITE.encrypt(plaintext, X25519PublicKey.from_public_bytes(key.public_key), bound)
    return {**envelope, "key_id": key.key_id, "sealed": b64encode(sealed)}


def padded(payload: Mapping[str, Any]) -> bytes:
    """Return the plaintext of a payload: compact JSON, UTF-8, padded with spaces.

    The ciphertext's length must not tell the shuffler the payload (``{"index":7}`` is
    shorter than ``{"index":1234}``). JSON allows trailing whitespace, so the text is padded
    to :func:`padded_length`, which counts every number or boolean as
    ``MAX_SCALAR_CHARS`` wide: it depends only on the field names and the strings' lengths,
    which a task fixes (the bit strings' lengths follow from m or d).
    """
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return text + b" " * (padded_length(payload) - len(text))


def padded_length(payload: Any) -> int:
    """Return the padded plaintext length: the widest JSON of this shape, to PAD_BLOCK."""
    return -(-_widest(payload) // PAD_BLOCK) * PAD_BLOCK


def _widest(value: Any) -> int:
    if isinstance(value, dict):
        fields = [_widest(str(k)) + 1 + _widest(v) for k, v in value.items()]
        return 2 + sum(fields) + max(len(fields) - 1, 0)
    if isinstance(value, (list, tuple)):
        return 2 + sum(_widest(v) for v in value) + max(len(value) - 1, 0)
    if isinstance(value, str):
        return len(json.dumps(value, ensure_ascii=False).encode("utf-8"))
    return MAX_SCALAR_CHARS


def open_report(
    task_id: str, obj: Mapping[str, Any], keys: Mapping[str, X25519PrivateKey]
) -> dict[str, Any]:
    """Return the plain report a sealed report's JSON object holds, or raise DecodeError.

    The envelope fields are taken as they are (the codec checks them next); ``keys`` maps
    the key ids the collector holds to their private keys. Reasons: ``unknown_seal_key``
    (a key id not held: retired, or never this collector's), ``sealed_invalid`` (the
    ciphertext does not open under its envelope: tampered, or moved from another report).
    """
    key_id, sealed = obj.get("key_id"), obj.get("sealed")
    if not isinstance(key_id, str) or not KEY_ID.fullmatch(key_id):
        raise DecodeError("key_id must be 1-32 characters of A-Z a-z 0-9 - _")
    if not isinstance(sealed, str) or len(sealed) > MAX_SEALED_CHARS:
        raise DecodeError(
            f"sealed must be a base64url string of at most {MAX_SEALED_CHARS} characters"
        )
    private = keys.get(key_id)
    if private is None:
        raise DecodeError(
            f"the report is sealed to key {key_id!r}, which this collector does not hold "
            "(retired or never issued); fetch the task again",
            reason=UNKNOWN_SEAL_KEY,
        )
    size = len(sealed) * 3 // 4
    ciphertext = b64decode(sealed, size, "sealed") if size else b""
    if len(ciphertext) < ENC_BYTES + TAG_BYTES:
        raise DecodeError("sealed is too short to hold an HPKE ciphertext", SEALED_INVALID)
    report_id, fingerprint, time = obj.get("report_id"), obj.get("fingerprint"), obj.get("time")
    if not (isinstance(report_id, str) and isinstance(fingerprint, str) and type(time) is int):
        raise DecodeError("a sealed report needs report_id, fingerprint and an integer time")
    dims = obj.get("dims")  # checked by the codec before the report is opened
    try:  # RFC 8785 refuses integers past 2^53 and strings with lone surrogates
        bound = info(task_id, fingerprint, key_id, report_id, time, dims)
    except ValueError:
        raise DecodeError("the sealed report's envelope is not canonicalizable JSON") from None
    try:
        plaintext = _SUITE.decrypt(ciphertext, private, bound)
    except InvalidTag:
        raise DecodeError(
            "the sealed payload does not open under this report's id, time, task and key",
            reason=SEALED_INVALID,
        ) from None
    try:
        payload = json.loads(plaintext)
    except (ValueError, RecursionError):  # opened but not JSON (or nested past any payload)
        raise DecodeError("the sealed payload is not a JSON object") from None
    if not isinstance(payload, dict) or set(payload) & set(CLEAR_FIELDS):
        raise DecodeError("the sealed payload must be a JSON object of the payload fields")
    # The length is what a relay sees: a sealer that pads otherwise (or not at all) tells it
    # the payload. The report is refused so such a client fails its first test, not in use.
    if len(plaintext) != padded_length(payload):
        raise DecodeError(
            f"the sealed plaintext is {len(plaintext)} bytes; PROTOCOL.md §10 pads this "
            f"payload to {padded_length(payload)}: the sealing client leaks its payload "
            "through the ciphertext's length",
            reason=SEALED_PADDING,
        )
    clear = {"report_id": report_id, "fingerprint": fingerprint, "time": time}
    return {**clear, **({"dims": dims} if "dims" in obj else {}), **payload}


def sealable(public_key: bytes) -> bool:
    """Return whether reports can be sealed to a raw X25519 public key: not one of low order,
    whose shared secret is all zeros (RFC 9180 §7.1.4: refused; PROTOCOL.md §10)."""
    try:
        X25519PrivateKey.generate().exchange(X25519PublicKey.from_public_bytes(public_key))
    except ValueError:  # OpenSSL refuses the all-zero result
        return False
    return True


def new_private_key() -> X25519PrivateKey:
    """Return a fresh X25519 private key (from the OS CSPRNG, through OpenSSL)."""
    return X25519PrivateKey.generate()


def private_key_bytes(key: X25519PrivateKey) -> bytes:
    """Return a private key's 32 raw bytes (what the collector's key file keeps)."""
    from cryptography.hazmat.primitives import serialization

    raw = serialization.Encoding.Raw
    return key.private_bytes(raw, serialization.PrivateFormat.Raw, serialization.NoEncryption())


def private_key_from_bytes(raw: bytes) -> X25519PrivateKey:
    """Return the private key of 32 raw bytes."""
    return X25519PrivateKey.from_private_bytes(raw)


def public_key_bytes(key: X25519PrivateKey) -> bytes:
    """Return the raw public key of a private key (what a task publishes)."""
    from cryptography.hazmat.primitives import serialization

    raw = serialization.Encoding.Raw
    return key.public_key().public_bytes(raw, serialization.PublicFormat.Raw)


def new_key_id() -> str:
    """Return a fresh random key id (12 base64url characters, the first not ``-``: a
    command line such as ``keys retire KEY_ID`` would read such an id as an option)."""
    while True:
        key_id = b64encode(os.urandom(9))
        if not key_id.startswith("-"):
            return key_id
