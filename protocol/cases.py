"""The inputs of the conformance vectors: tasks, values, fixed words, JSON texts."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

from ldp_telemetry.shared.hashing import value_key

SEED = 3651556171
VALUES = ["hello", "", "naïve", "😂", "a much longer value with spaces"]

# JSON texts whose RFC 8785 form a fingerprint depends on: number forms, escapes, and key
# order by UTF-16 code units (U+1F602 is D83D DE02, so it sorts before U+FB33).
CANONICAL_JSON = [
    '{"b": 1e-05, "a": 4.0, "c": 0, "d": -0.0, "e": 100, "f": 1.5e300}',
    '{"big": 1e21, "small": 1e-7, "tenth": 0.1, "ln3": 1.0986122886681098, "n": 4294967295}',
    r'{"\u00e9": "\u007f\u001f\"\\/", "\ud83d\ude02": 1, "\ufb33": 2, "a": [true, false, null]}',
    r'{"domain": ["red", "gr\u00fcn", "\ud83d\udd35"], "nested": {"z": {}, "y": []}}',
]

# (entropy input, nonce ‖ personalization, generate-call sizes in bytes)
DRBG = [
    (bytes(range(32)), b"", [4, 20, 64]),
    (bytes(32), b"ldp-telemetry permanent response\x00{}\x00\x01", [20, 4, 100]),
]


def _words(seed: int, lists: int = 3, size: int = 48, first: tuple[int, ...] = ()) -> Any:
    """Return fixed word lists (the first one starting with ``first``)."""
    rng = np.random.default_rng(seed)
    out = [[int(w) for w in rng.integers(0, 2**32, size=size)] for _ in range(lists)]
    out[0][: len(first)] = first
    return out


MAX = 2**32 - 1  # a word every rejection rule (k = 3, g = 3, sw's U) refuses
TASKS: dict[str, dict[str, Any]] = {
    "rr": {
        "mechanism": "rr",
        "epsilon": 1.0986122886681098,
        "values": [True, False],
        "words": [[3_000_000_000], [1_000_000_000]],
    },
    "rr-ab": {
        "mechanism": "rr",
        "alpha": 0.5,
        "beta": 0.25,
        "values": [True, False],
        "words": [[2_684_354_559], [536_870_912]],
    },
    "grr": {
        "mechanism": "grr",
        "epsilon": 2.0,
        "domain": ["red", "grün", "🔵"],
        "time_precision": 3600,
        "min_batch_size": 10,
        "values": ["red", "🔵", "grün"],
        "words": [[100], [457_443_992], [4_000_000_000]],
    },
    "olh": {
        "mechanism": "olh",
        "epsilon": 1.0,
        "k": 3,
        "hash_seed": SEED,
        "values": ["hello", "naïve", "😂"],
        "words": _words(1, first=(MAX, 7, 5)),
    },
    "olh-capped": {
        "mechanism": "olh",
        "epsilon": 12.0,
        "k": 2,
        "hash_seed": 7,
        "values": ["hello"],
        "words": _words(2),
    },
    "cms": {
        "mechanism": "cms",
        "epsilon": 4.0,
        "k": 4,
        "m": 20,
        "hash_seed": SEED,
        "values": ["hello", "😂"],
        "words": _words(3),
    },
    "hcms": {
        "mechanism": "hcms",
        "epsilon": 4.0,
        "k": 3,
        "m": 16,
        "hash_seed": SEED,
        "values": ["hello", "naïve", ""],
        "words": _words(4, first=(MAX, 2, 13, 9)),
    },
    "hh": {
        "mechanism": "hh",
        "epsilon": 4.0,
        "k": 2,
        "m": 32,
        "hash_seed": SEED,
        "max_length": 6,
        "values": ["hello", "naïve", "a"],
        "words": _words(5),
    },
    "hh-alphabet": {
        "mechanism": "hh",
        "epsilon": 3.0,
        "k": 2,
        "m": 24,
        "hash_seed": 42,
        "alphabet": "abcdefghijklmnopqrstuvwxyzé",
        "max_length": 5,
        "first": 1,
        "step": 2,
        "values": ["café", "cafe\u0301", "zz"],  # the second is the first before NFC
        "words": _words(6),
    },
    "numeric-sw": {
        "mechanism": "numeric",
        "epsilon": 2.0,
        "lo": 0,
        "hi": 1,
        "buckets": 16,
        "values": [0.3, 2.5, -1],
        "words": _words(7, first=(MAX,)),
    },
    "numeric-log": {
        "mechanism": "numeric",
        "epsilon": 1.5,
        "lo": 1,
        "hi": 5000,
        "buckets": 64,
        "scale": "log",
        "values": [42.0, 0.5, 4999.0],
        "words": _words(8),
    },
    "numeric-1bit": {
        "mechanism": "numeric",
        "epsilon": 1.0,
        "lo": 0,
        "hi": 100,
        "buckets": 50,
        "method": "1bit",
        "values": [25.0, 99.5],
        "words": _words(9),
    },
    "oue": {
        "mechanism": "oue",
        "epsilon": 2.0,
        "domain": ["red", "grün", "🔵", "gelb", "lila", "rosa", "weiß", "grau", "blau", "rot"],
        "values": ["red", "🔵", "rot"],
        "words": _words(7, size=16),
    },
    "ss": {
        "mechanism": "ss",
        "epsilon": 1.0,
        "domain": ["red", "grün", "🔵", "gelb", "lila", "rosa", "weiß", "grau", "blau", "rot"],
        "values": ["red", "🔵", "rot"],
        "words": _words(8, first=(0,), size=16),  # the first report leaves its value out
    },
    "rr-longitudinal": {
        "mechanism": "rr",
        "longitudinal": {"epsilon_inf": 2.0, "flip": 0.1},
        "values": [True, False],
        "words": [[100], [3_000_000_000]],
    },
    "grr-longitudinal": {
        "mechanism": "grr",
        "domain": ["a", "b", "c", "d"],
        "longitudinal": {"epsilon_inf": 3.0, "epsilon_1": 1.0},
        "values": ["b", "d"],
        "words": [[5], [4_000_000_000]],
    },
    "cms-longitudinal": {
        "mechanism": "cms",
        "k": 3,
        "m": 16,
        "hash_seed": SEED,
        "longitudinal": {"epsilon_inf": 4.0, "epsilon_1": 1.0},
        "values": ["hello", "naïve"],
        "words": _words(10),
    },
    "hcms-longitudinal": {
        "mechanism": "hcms",
        "k": 2,
        "m": 8,
        "hash_seed": 99,
        "longitudinal": {"epsilon_inf": 3.0, "flip": 0.2},
        "values": ["naïve", "x"],
        "words": _words(11),
    },
    # Protocol 1.1: a longitudinal one-bit mean (§3.9), a permanent bit per bucket.
    "numeric-1bit-longitudinal": {
        "mechanism": "numeric",
        "method": "1bit",
        "lo": 0.0,
        "hi": 120.0,
        "buckets": 16,
        "longitudinal": {"epsilon_inf": 2.0, "epsilon_1": 1.0},
        "values": [7.5, 64.0, 119.9],
        "words": [[5], [4_000_000_000], [3_000_000_000]],
    },
    # Protocol 1.1 (§3.13): LOLOHA, BiLOLOHA (g = 2) and the optimal g.
    "grr-loloha": {
        "mechanism": "grr",
        "domain": ["a", "b", "c", "d", "e", "f"],
        "longitudinal": {
            "variant": "loloha",
            "epsilon_inf": 2.0,
            "epsilon_1": 1.0,
            "g": 2,
            "seeds": 8,
            "hash_seed": SEED,
        },
        "values": ["b", "e", "f"],
        "words": [[7], [4_000_000_000], [1_000_000_000]],
    },
    "grr-loloha-optimal": {
        "mechanism": "grr",
        "domain": ["red", "grün", "🔵", "gelb", "lila", "rosa", "weiß", "grau", "blau", "rot"],
        "longitudinal": {
            "variant": "loloha",
            "epsilon_inf": 4.0,
            "epsilon_1": 1.0,
            "g": "optimal",
            "seeds": 5,
            "hash_seed": 99,
        },
        "values": ["🔵", "rot", "weiß"],
        "words": [[12_345], [4_200_000_000], [900_000_000]],
    },
}


def payload_detail(payload: dict[str, Any], hashing: dict[str, Any], m: int | None) -> Any:
    """Return what a payload encodes, spelled out: a sketch's m bits, an HCMS entry's sign."""
    if "bits" in payload and m is not None:
        raw = base64.urlsafe_b64decode(payload["bits"] + "=" * (-len(payload["bits"]) % 4))
        return {"bit_string": "".join(f"{byte:08b}" for byte in raw)[:m]}
    if "col" in payload:  # the Hadamard entry H[col, h_row(key)] is +1 when plus
        bucket = hashing["buckets"][payload["row"]]
        return {"plus": (payload["col"] & bucket).bit_count() % 2 == 0}
    return {}


def hashing_of(device: Any, value: Any) -> dict[str, Any]:
    """Return what a value hashes and maps to under a device's mechanism, by what it has."""
    mechanism = getattr(device, "permanent", device)  # a longitudinal task's own mechanism
    if hasattr(mechanism, "lengths"):  # prefix levels: the device's level and its item
        level = mechanism.device_level
        sketch = mechanism.sketches[level]
        item = mechanism.item(mechanism.units(value), level)
        key = value_key(item, sketch.hash_seed)
        return {
            "level": level,
            "level_seed": sketch.hash_seed,
            "item": item.encode("latin-1").hex(),
            "hashed": item.encode("utf-8").hex(),
            "key": f"{key:016x}",
            "buckets": [sketch.hashes.bucket(key, j) for j in range(sketch.k)],
        }
    if hasattr(mechanism, "hashes"):
        key = mechanism.key(value)
        return {
            "key": f"{key:016x}",
            "buckets": [mechanism.hashes.bucket(key, j) for j in range(mechanism.k)],
        }
    if hasattr(mechanism, "bucket_of"):
        return {"bucket": mechanism.bucket_of(value)}
    if hasattr(mechanism, "index_of"):
        return {"index": mechanism.index_of(value)}
    return {}
