"""A second device-side implementation, written only from PROTOCOL.md.

It imports nothing of this project (a test checks): the standard library and mmh3 (the
MurmurHash3 the protocol names). It fetches a task, checks its fingerprint, privatizes
values for rr, grr, cms, hcms and olh, and uploads batches. Randomness is the OS CSPRNG.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import secrets
import urllib.request
from typing import Any

import mmh3

MASK64 = (1 << 64) - 1
SCALE = 1 << 32


# -- §1 tasks ---------------------------------------------------------------------------


def fingerprint(task: dict[str, Any]) -> str:
    """SHA-256 of the sorted, compact, ASCII-escaped JSON without the two derived fields."""
    fields = {k: v for k, v in task.items() if k not in ("fingerprint", "effective_epsilon")}
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


# -- §2 reports -------------------------------------------------------------------------


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def floor_time(unix: float, precision: int) -> int:
    return int(unix // precision) * precision


def envelope(task: dict[str, Any], unix: float, payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "report_id": b64url(os.urandom(16)),
        "fingerprint": task["fingerprint"],
        "time": floor_time(unix, task["time_precision"]),
        **payload,
    }


# -- §3 randomness and hashing ---------------------------------------------------------------


def threshold(p: float) -> int:
    """T = ceil(p * 2^32): p * 2^32 is exact in double precision."""
    return math.ceil(p * SCALE)


def word() -> int:
    return secrets.randbits(32)


def below(n: int) -> int:
    return secrets.randbelow(n)


def splitmix64(seed: int, count: int) -> list[int]:
    out = []
    for i in range(1, count + 1):
        z = (seed + i * 0x9E3779B97F4A7C15) & MASK64
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        out.append(z ^ (z >> 31))
    return out


class HashFamily:
    """§3.1: key = MurmurHash3 x64 (low half), row j: multiply-add-shift then scale to m."""

    def __init__(self, seed: int, k: int, m: int) -> None:
        words = splitmix64(seed, 2 * k)
        self.seed, self.m = seed, m
        self.a = [words[2 * j] | 1 for j in range(k)]
        self.b = [words[2 * j + 1] for j in range(k)]

    def key(self, value: str) -> int:
        return mmh3.hash64(value.encode("utf-8"), self.seed, signed=False)[0]

    def bucket(self, key: int, row: int) -> int:
        mixed = (self.a[row] * key + self.b[row]) & MASK64
        return ((mixed >> 32) * self.m) >> 32


# -- §3.2-3.6 mechanisms --------------------------------------------------------------------


def rr(task: dict[str, Any], answer: bool) -> dict[str, Any]:
    lie = threshold(1.0 / (1.0 + math.exp(task["epsilon"])))
    return {"bit": int(word() < (SCALE - lie if answer else lie))}


def grr_index(truth: int, d: int, epsilon: float) -> int:
    t = threshold(1.0 / (math.exp(epsilon) + d - 1))
    w = word()
    if w < (d - 1) * t:
        other = w // t
        return other + (other >= truth)
    return truth


def grr(task: dict[str, Any], value: str) -> dict[str, Any]:
    domain = task["domain"]
    return {"index": grr_index(domain.index(value), len(domain), task["epsilon"])}


def cms(task: dict[str, Any], value: str) -> dict[str, Any]:
    k, m = task["k"], task["m"]
    family = HashFamily(task["hash_seed"], k, m)
    row = below(k)
    t = threshold(1.0 / (1.0 + math.exp(task["epsilon"] / 2)))
    bits = [int(word() < t) for _ in range(m)]
    bits[family.bucket(family.key(value), row)] ^= 1
    return {"row": row, "bits": b64url(pack_bits(bits))}


def pack_bits(bits: list[int]) -> bytes:
    """Most significant bit first; the last byte's unused bits stay 0."""
    packed = bytearray((len(bits) + 7) // 8)
    for position, bit in enumerate(bits):
        if bit:
            packed[position // 8] |= 0x80 >> (position % 8)
    return bytes(packed)


def hcms(task: dict[str, Any], value: str) -> dict[str, Any]:
    k, m = task["k"], task["m"]
    family = HashFamily(task["hash_seed"], k, m)
    row, col = below(k), below(m)
    plus = bin(col & family.bucket(family.key(value), row)).count("1") % 2 == 0
    flipped = word() < threshold(1.0 / (1.0 + math.exp(task["epsilon"])))
    return {"row": row, "col": col, "bit": int(plus != flipped)}


def olh_buckets(epsilon: float) -> int:
    return min(65536, max(2, math.floor(math.exp(epsilon)) + 1))


def olh(task: dict[str, Any], value: str) -> dict[str, Any]:
    g = olh_buckets(task["epsilon"])
    family = HashFamily(task["hash_seed"], task["k"], g)
    row = below(task["k"])
    truth = family.bucket(family.key(value), row)
    return {"row": row, "index": grr_index(truth, g, task["epsilon"])}


def numeric_bucket(task: dict[str, Any], value: float) -> int:
    """§3.8: clip, map through the scale, floor into one of d buckets."""
    lo, hi, d = task["lo"], task["hi"], task["buckets"]
    f = math.log if task["scale"] == "log" else float
    u = (f(min(max(value, lo), hi)) - f(lo)) / (f(hi) - f(lo))
    return min(math.floor(u * d), d - 1)


def numeric_output(task: dict[str, Any], bucket: int, draw: Any = word) -> int:
    """§3.8: the report of a bucket, from uniform 32-bit words ``draw()``."""
    eps, d = task["epsilon"], task["buckets"]
    if task["method"] == "1bit":
        low = threshold(1.0 / (1.0 + math.exp(eps)))
        step = (SCALE - 2 * low) // (d - 1)
        return int(draw() < low + bucket * step)
    e = math.exp(eps)
    w = round((eps * e - e + 1) / (2 * e * (e - 1 - eps)) * d)
    far = threshold(1.0 / ((2 * w + 1) * e + d - 1))
    near = (SCALE - (d - 1) * far) // (2 * w + 1)
    used = (d - 1) * far + (2 * w + 1) * near
    x = draw()
    while x >= used:
        x = draw()
    if x < (d - 1) * far:
        other = x // far
        return other + (2 * w + 1 if other >= bucket else 0)
    return bucket + (x - (d - 1) * far) // near


def numeric(task: dict[str, Any], value: float) -> dict[str, Any]:
    return {"index": numeric_output(task, numeric_bucket(task, value))}


PRIVATIZE = {"rr": rr, "grr": grr, "cms": cms, "hcms": hcms, "olh": olh, "numeric": numeric}


# -- HTTP -------------------------------------------------------------------------------------


def get_task(base_url: str, task_id: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{base_url}/v1/tasks/{task_id}", timeout=10) as answer:
        task: dict[str, Any] = json.load(answer)
    if fingerprint(task) != task["fingerprint"]:
        raise ValueError(f"cannot reproduce the fingerprint of task {task_id!r}")
    return task


def upload(base_url: str, task_id: str, reports: list[dict[str, Any]]) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{base_url}/v1/tasks/{task_id}/reports",
        method="POST",
        data=json.dumps({"reports": reports}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        result: dict[str, Any] = json.load(answer)
    return result
