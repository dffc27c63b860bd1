"""Sealed reports (PROTOCOL.md §10) for the independent client, written only from the spec.

Like independent_client.py it imports nothing of this project (a test checks): the
standard library, rfc8785 and cryptography's RFC 9180 HPKE.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import rfc8785
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey
from cryptography.hazmat.primitives.hpke import AEAD, KDF, KEM, Suite


def widest(value: Any) -> int:
    """§10: the JSON length with every number and literal 24 characters wide."""
    if isinstance(value, dict):
        inner = [
            len(json.dumps(str(k), ensure_ascii=False).encode()) + 1 + widest(v)
            for k, v in value.items()
        ]
        return 2 + sum(inner) + max(0, len(inner) - 1)
    if isinstance(value, list):
        return 2 + sum(widest(v) for v in value) + max(0, len(value) - 1)
    if isinstance(value, str):
        return len(json.dumps(value, ensure_ascii=False).encode())
    return 24


def plaintext(payload: dict[str, Any]) -> bytes:
    """§10: the compact JSON, then spaces up to the widest length rounded up to 16 bytes."""
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
    return text.ljust(-(-widest(payload) // 16) * 16, b" ")


def seal_info(task_id: str, key_id: str, clear: dict[str, Any]) -> bytes:
    """§10 step 3: RFC 8785 of the envelope (with a dimensions task's dims), label, task id."""
    return rfc8785.dumps(
        {**clear, "key_id": key_id, "label": "ldp-telemetry/seal/1", "task_id": task_id}
    )


def seal(task: dict[str, Any], report: dict[str, Any]) -> dict[str, Any]:
    """§10: the report with its payload fields replaced by key_id and sealed."""
    key = task["seal"]
    if (key["kem"], key["kdf"], key["aead"]) != (0x20, 0x01, 0x03):
        raise ValueError("§10: only DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, ChaCha20-Poly1305")
    common = ("report_id", "fingerprint", "time", "dims")  # dims: §11, in the clear
    payload = {k: v for k, v in report.items() if k not in common}
    bound = {name: report[name] for name in common if name in report}
    info = seal_info(task["task_id"], key["key_id"], bound)
    public = X25519PublicKey.from_public_bytes(
        base64.urlsafe_b64decode(key["public_key"] + "=" * (-len(key["public_key"]) % 4))
    )
    sealed = Suite(KEM.X25519, KDF.HKDF_SHA256, AEAD.CHACHA20_POLY1305).encrypt(
        plaintext(payload), public, info
    )
    return {**bound, "key_id": key["key_id"], "sealed": _b64url(sealed)}


def _b64url(raw: bytes) -> str:
    """§2: base64url without padding."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")
