"""A second device-side implementation, written only from PROTOCOL.md.

It imports nothing of this project (a test checks): the standard library, mmh3 (the
MurmurHash3 the protocol names) and rfc8785 (the JSON Canonicalization Scheme it names);
sealing (§10) is in independent_sealing.py.
It fetches a task, checks its protocol version, fingerprint and derived integers,
privatizes values for rr, grr, cms, hcms, olh and numeric with the published integers,
and uploads batches. Randomness is the OS CSPRNG. Permanent responses (§3.9, HMAC-DRBG)
are in independent_longitudinal.py.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
import os
import secrets
import unicodedata
import urllib.request
from typing import Any

import mmh3
import rfc8785

from .independent_dimensions import check as check_dimensions

MASK64 = (1 << 64) - 1
SCALE = 1 << 32


# -- §1 tasks ---------------------------------------------------------------------------


NOT_FINGERPRINTED = (
    "fingerprint",
    "effective_epsilon",
    "effective_epsilon_inf",
    "upload_key_required",
    "archive",
    "attack_success",
    "selection",
    "seal",
)


def fingerprint(task: dict[str, Any]) -> str:
    """SHA-256 of the RFC 8785 form of the task without the fields §1 leaves out."""
    fields = {k: v for k, v in task.items() if k not in NOT_FINGERPRINTED}
    return hashlib.sha256(rfc8785.dumps(fields)).hexdigest()[:32]


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


def own_derived(task: dict[str, Any]) -> dict[str, Any]:
    """§3: the integers of a (non-longitudinal) rr, grr, cms, hcms, olh or numeric task."""
    eps, kind = task.get("epsilon"), task["mechanism"]
    if kind == "rr":
        lie = threshold(1.0 / (1.0 + math.exp(eps)))
        return {"T_yes": SCALE - lie, "T_no": lie}
    if kind == "grr":
        return {"T": threshold(1.0 / (math.exp(eps) + len(task["domain"]) - 1))}
    if kind == "cms":
        return {"T": threshold(1.0 / (1.0 + math.exp(eps / 2)))}
    if kind == "hcms":
        return {"T": threshold(1.0 / (1.0 + math.exp(eps)))}
    if kind == "olh":
        g = olh_buckets(eps)
        return {"g": g, "T": threshold(1.0 / (math.exp(eps) + g - 1))}
    if kind == "oue":
        return {"keep": SCALE // 2, "other": threshold(1.0 / (math.exp(eps) + 1.0))}
    if kind == "ss":
        d = len(task["domain"])
        omega = ss_size(eps, d)
        exclude = threshold((d - omega) / (omega * math.exp(eps) + d - omega))
        return {"subset_size": omega, "exclude": exclude}
    return numeric_derived(task)


def rr(task: dict[str, Any], answer: bool) -> dict[str, Any]:
    derived = task["derived"]
    return {"bit": int(word() < (derived["T_yes"] if answer else derived["T_no"]))}


def grr_index(truth: int, d: int, t: int, r: int) -> int:
    if r < (d - 1) * t:
        other = r // t
        return other + (other >= truth)
    return truth


def grr(task: dict[str, Any], value: str) -> dict[str, Any]:
    domain = task["domain"]
    return {"index": grr_index(domain.index(value), len(domain), task["derived"]["T"], word())}


def cms(task: dict[str, Any], value: str) -> dict[str, Any]:
    k, m = task["k"], task["m"]
    family = HashFamily(task["hash_seed"], k, m)
    row = below(k)
    t = task["derived"]["T"]
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
    flipped = word() < task["derived"]["T"]
    return {"row": row, "col": col, "bit": int(plus != flipped)}


def olh_buckets(epsilon: float) -> int:
    return min(65536, max(2, math.floor(math.exp(epsilon)) + 1))


def olh(task: dict[str, Any], value: str) -> dict[str, Any]:
    g, t = task["derived"]["g"], task["derived"]["T"]
    family = HashFamily(task["hash_seed"], task["k"], g)
    row = below(task["k"])
    truth = family.bucket(family.key(value), row)
    return {"row": row, "index": grr_index(truth, g, t, word())}


def device_key(secret: bytes, task_id: str) -> bytes:
    return hmac.new(secret, b"ldp-telemetry device key\x00" + task_id.encode(), "sha256").digest()


def hh_levels(task: dict[str, Any]) -> dict[str, list[int]]:
    """§3.7: the prefix lengths and each level's hash seed."""
    first, step, top = task["first"], task["step"], task["max_length"]
    levels = [*range(first, top, step), top]
    words = splitmix64(task["hash_seed"], len(levels))
    seeds = [task["hash_seed"]] + [words[g] & 0xFFFFFFFF for g in range(1, len(levels))]
    return {"levels": levels, "level_seeds": seeds}


def hh(task: dict[str, Any], value: str, secret: bytes) -> dict[str, Any]:
    """§3.7: NFC, symbols, the device's level, the item read as Latin-1, one CMS report."""
    text = unicodedata.normalize("NFC", value)
    if task["alphabet"] == "bytes":
        symbols = [bytes([b]) for b in text.encode("utf-8")]
    else:
        assert all(c in task["alphabet"] for c in text)
        symbols = [c.encode("utf-8") for c in text]
    assert 1 <= len(symbols) <= task["max_length"]
    derived = task["derived"]
    level = int.from_bytes(device_key(secret, task["task_id"]), "big") % len(derived["levels"])
    length = derived["levels"][level]
    item = b"".join(symbols[:length]) + (b"\xff" if len(symbols) < length else b"")
    hashed = item.decode("latin-1")  # each byte one code point; its UTF-8 is what is hashed
    level_task = {**task, "hash_seed": derived["level_seeds"][level]}
    return {"level": level, **cms(level_task, hashed)}


def numeric_bucket(task: dict[str, Any], value: float) -> int:
    """§3.8: clip, map through the scale, floor into one of d buckets."""
    lo, hi, d = task["lo"], task["hi"], task["buckets"]
    f = math.log if task["scale"] == "log" else float
    u = (f(min(max(value, lo), hi)) - f(lo)) / (f(hi) - f(lo))
    return min(math.floor(u * d), d - 1)


def numeric_derived(task: dict[str, Any]) -> dict[str, int]:
    """§3.8: the integers of a numeric task (L, S for 1bit; w, T, P, U for sw)."""
    eps, d = task["epsilon"], task["buckets"]
    if task["method"] == "1bit":
        low = threshold(1.0 / (1.0 + math.exp(eps)))
        return {"L": low, "S": (SCALE - 2 * low) // (d - 1)}
    e = math.exp(eps)
    w = round((eps * e - e + 1) / (2 * e * (e - 1 - eps)) * d)
    far = threshold(1.0 / ((2 * w + 1) * e + d - 1))
    near = (SCALE - (d - 1) * far) // (2 * w + 1)
    return {"w": w, "T": far, "P": near, "U": (d - 1) * far + (2 * w + 1) * near}


def numeric_output(task: dict[str, Any], bucket: int, draw: Any = word) -> int:
    """§3.8: the report of a bucket, from uniform 32-bit words ``draw()``."""
    d, derived = task["buckets"], task["derived"]
    if task["method"] == "1bit":
        return int(draw() < derived["L"] + bucket * derived["S"])
    w, far, near, used = derived["w"], derived["T"], derived["P"], derived["U"]
    x = draw()
    while x >= used:
        x = draw()
    if x < (d - 1) * far:
        other = x // far
        return other + (2 * w + 1 if other >= bucket else 0)
    return bucket + (x - (d - 1) * far) // near


def numeric(task: dict[str, Any], value: float) -> dict[str, Any]:
    return {"index": numeric_output(task, numeric_bucket(task, value), word)}


def oue(task: dict[str, Any], value: str) -> dict[str, Any]:
    """§3.11: every bit with `other`, then the value's bit again with `keep`."""
    domain, derived = task["domain"], task["derived"]
    truth = domain.index(value)
    bits = [int(word() < derived["other"]) for _ in domain]
    bits[truth] = int(word() < derived["keep"])
    return {"bits": b64url(pack_bits(bits))}


def ss_size(epsilon: float, d: int) -> int:
    return min(d - 1, max(1, math.floor(d / (math.exp(epsilon) + 1.0) + 0.5)))


def ss(task: dict[str, Any], value: str) -> dict[str, Any]:
    """§3.12: the value in unless a word is below `exclude`, the rest by Floyd's algorithm."""
    derived, d = task["derived"], len(task["domain"])
    truth = task["domain"].index(value)
    keep = word() >= derived["exclude"]
    chosen: list[int] = []
    size = derived["subset_size"] - keep
    for j in range(d - 1 - size, d - 1):
        t = below(j + 1)
        chosen.append(j if t in chosen else t)
    values = [c + (c >= truth) for c in chosen] + ([truth] if keep else [])
    return {"indices": sorted(values)}


PRIVATIZE = {
    "rr": rr,
    "grr": grr,
    "cms": cms,
    "hcms": hcms,
    "olh": olh,
    "numeric": numeric,
    "oue": oue,
    "ss": ss,
}


# -- HTTP -------------------------------------------------------------------------------------


PROTOCOLS = ("1.0", "1.1")  # what this client implements (1.1: dimensions, §11)


def get_task(
    base_url: str, task_id: str, implements: tuple[str, ...] = PROTOCOLS
) -> dict[str, Any]:
    """Fetch one task and check it (a refusal is this task's alone: the caller goes on)."""
    with urllib.request.urlopen(f"{base_url}/v1/tasks/{task_id}", timeout=10) as answer:
        task: dict[str, Any] = json.load(answer)
    if task.get("protocol") not in implements:
        raise ValueError(f"task {task_id!r} is for protocol {task.get('protocol')!r}")
    if task["protocol"] != ("1.1" if "dimensions" in task else "1.0"):
        raise ValueError(f"task {task_id!r}: protocol 1.1 is exactly the tasks with dimensions")
    if "dimensions" in task:
        check_dimensions(task)
    if fingerprint(task) != task["fingerprint"]:
        raise ValueError(f"cannot reproduce the fingerprint of task {task_id!r}")
    if own_derived(task) != task["derived"]:
        raise ValueError(f"task {task_id!r} publishes other derived integers than §3 gives")
    return task


def upload(
    base_url: str, task_id: str, reports: list[dict[str, Any]], protocol: str | None = "1.1"
) -> dict[str, Any]:
    """POST one batch (§2); ``protocol`` None sends no LDP-Protocol header."""
    headers = {"Content-Type": "application/json"}
    if protocol is not None:
        headers["LDP-Protocol"] = protocol
    request = urllib.request.Request(
        f"{base_url}/v1/tasks/{task_id}/reports",
        method="POST",
        data=json.dumps({"reports": reports}).encode(),
        headers=headers,
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        result: dict[str, Any] = json.load(answer)
    return result
