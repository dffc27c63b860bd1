"""Permanent responses (PROTOCOL.md §3.9, §3.13) for the independent client, from the spec only.

Like independent_client.py it imports nothing of this project (a test checks): the
standard library, rfc8785, and independent_client's §3 pieces.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import math
from collections.abc import Callable
from typing import Any

import rfc8785

from .independent_client import (
    NOT_FINGERPRINTED,
    SCALE,
    HashFamily,
    b64url,
    device_key,
    grr_index,
    numeric_bucket,
    pack_bits,
    threshold,
    word,
)


def drbg(seed_material: bytes) -> Callable[[int], bytes]:
    """HMAC-DRBG (SHA-256, no reseed): instantiate, then one generate call per use."""
    state = {"k": bytes(32), "v": b"\x01" * 32}

    def h(key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, hashlib.sha256).digest()

    def update(provided: bytes) -> None:
        state["k"] = h(state["k"], state["v"] + b"\x00" + provided)
        state["v"] = h(state["k"], state["v"])
        if provided:
            state["k"] = h(state["k"], state["v"] + b"\x01" + provided)
            state["v"] = h(state["k"], state["v"])

    def generate(size: int) -> bytes:
        out = b""
        while len(out) < size:
            state["v"] = h(state["k"], state["v"])
            out += state["v"]
        update(b"")
        return out[:size]

    update(seed_material)
    return generate


def prr_seed(secret: bytes, task: dict[str, Any], value_bytes: bytes) -> bytes:
    """§3.9: K ‖ context ‖ P ‖ 0x00 ‖ V, P the RFC 8785 form of the mechanism fields
    (1.1: neither `sealed` nor the dimensions are among them)."""
    common = (
        "task_id",
        "mechanism",
        "time_precision",
        "min_batch_size",
        "protocol",
        "derived",
        "sealed",
        "dimensions",
        "min_slice_size",
    )
    fields = {k: v for k, v in task.items() if k not in common + NOT_FINGERPRINTED}
    return (
        device_key(secret, task["task_id"])
        + b"ldp-telemetry permanent response\x00"
        + rfc8785.dumps(fields)
        + b"\x00"
        + value_bytes
    )


def drbg_words(generate: Callable[[int], bytes], count: int) -> list[int]:
    raw = generate(4 * count)
    return [int.from_bytes(raw[i : i + 4], "little") for i in range(0, len(raw), 4)]


def drbg_below(generate: Callable[[int], bytes], n: int) -> int:
    while True:
        for r in drbg_words(generate, 5):
            if r < SCALE - SCALE % n:
                return r % n


def permanent_cms(task: dict[str, Any], secret: bytes, value: str) -> dict[str, Any]:
    """§3.9: a cms task's permanent response (row, then m words), by the DRBG."""
    generate = drbg(prr_seed(secret, task, value.encode("utf-8")))
    k, m, t = task["k"], task["m"], task["derived"]["T"]
    row = drbg_below(generate, k)
    bits = [int(r < t) for r in drbg_words(generate, m)]
    family = HashFamily(task["hash_seed"], k, m)
    bits[family.bucket(family.key(value), row)] ^= 1
    return {"row": row, "bits": b64url(pack_bits(bits))}


def reflip_cms(report: dict[str, Any], m: int, t_i: int) -> dict[str, Any]:
    """§3.9: each of the m bits flips when its own fresh word is below T_i."""
    bits = base64.urlsafe_b64decode(report["bits"] + "=" * (-len(report["bits"]) % 4))
    flips = [int(word() < t_i) for _ in range(m)]  # §3.1's CSPRNG word
    return {
        "row": report["row"],
        "bits": b64url(bytes(a ^ b for a, b in zip(bits, pack_bits(flips), strict=True))),
    }


# -- §3.13 LOLOHA (protocol 1.1): a row, a permanent response per hashed bucket ---------------


def loloha_buckets(epsilon_inf: float, epsilon_1: float) -> int:
    """§3.13: the g in 2 … 256 whose rare-value variance V(g) is least (the smallest on ties)."""
    a, b = math.exp(epsilon_inf), math.exp(epsilon_1)

    def variance(g: int) -> float:
        p1, q1 = a / (a + g - 1), 1.0 / (a + g - 1)
        t = (p1 - b * q1) / (b * (p1 - q1) - (1.0 - g * p1))
        keep = p1 + t * (1.0 - g * p1)
        return (1.0 / g) * (1.0 - 1.0 / g) / (keep - 1.0 / g) ** 2

    return min(range(2, 257), key=lambda g: (variance(g), g))


def loloha_derived(task: dict[str, Any]) -> dict[str, int]:
    """§3.13: g and the permanent layer's T (T_i is published, found by bisection)."""
    layer = task["longitudinal"]
    g = layer["g"]
    if g == "optimal":
        g = loloha_buckets(layer["epsilon_inf"], layer["epsilon_1"])
    t = threshold(1.0 / (math.exp(layer["epsilon_inf"]) + g - 1))
    return {"g": g, "T": t, "T_i": task["derived"]["T_i"]}


def loloha_row(task: dict[str, Any], secret: bytes) -> int:
    """§3.13: the device's row, uniform below `seeds` from the DRBG (never stored)."""
    fields = rfc8785.dumps({k: task[k] for k in ("domain", "longitudinal")})
    generate = drbg(device_key(secret, task["task_id"]) + b"ldp-telemetry hash row\x00" + fields)
    return drbg_below(generate, task["longitudinal"]["seeds"])


def permanent_loloha(task: dict[str, Any], secret: bytes, value: str) -> dict[str, Any]:
    """§3.13: the permanent response of the value's bucket: GRR over g at ε∞, by the DRBG."""
    layer, g, t = task["longitudinal"], task["derived"]["g"], task["derived"]["T"]
    row = loloha_row(task, secret)
    family = HashFamily(layer["hash_seed"], layer["seeds"], g)
    bucket = family.bucket(family.key(value), row)
    generate = drbg(prr_seed(secret, task, bucket.to_bytes(4, "big")))
    return {"row": row, "index": grr_index(bucket, g, t, drbg_words(generate, 1)[0])}


def reflip_loloha(report: dict[str, Any], g: int, t_i: int) -> dict[str, Any]:
    """§3.13: one fresh word moves the bucket as §3.3 does, with T_i over g."""
    return {"row": report["row"], "index": grr_index(report["index"], g, t_i, word())}


# -- §3.9 numeric 1bit (protocol 1.1): a permanent bit per bucket ------------------------------


def permanent_one_bit(task: dict[str, Any], secret: bytes, value: float) -> dict[str, Any]:
    """§3.9: the bucket's one-bit report at ε∞ (§3.8), one DRBG call of 4 bytes."""
    bucket = numeric_bucket(task, value)
    generate = drbg(prr_seed(secret, task, bucket.to_bytes(4, "big")))
    ones = task["derived"]["L"] + bucket * task["derived"]["S"]
    return {"index": int(drbg_words(generate, 1)[0] < ones)}


def reflip_one_bit(report: dict[str, Any], t_i: int) -> dict[str, Any]:
    """§3.9: the bit flips when a fresh word is below T_i."""
    return {"index": report["index"] ^ int(word() < t_i)}
