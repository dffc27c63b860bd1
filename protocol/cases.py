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
    # Protocol 1.1: numbers whose shortest round-trip digits a fixed-precision printer
    # (C's %.17g, Java's Double.toString before JDK 19) does not give (PROTOCOL.md §1.2).
    '{"a": 2e23, "b": 5e-324, "c": 0.30000000000000004, "d": 1.7976931348623157e308, '
    '"e": 9007199254740991, "f": 1.2345678901234568e20, "g": 123e-20, "h": 5e-7, '
    '"i": 0.000001, "k": 9.999999999999999e20}',
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
DIMENSIONS = [  # 4 · 4 · 3 = 48 slices, other included
    {"name": "platform", "values": ["android", "ios", "web"]},
    {"name": "app_version", "values": ["5.1", "5.2", "5.3"]},
    {"name": "city", "values": ["Zürich", "Genève"]},
]
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
    # Protocol 1.1's vectors: what a 1.0 implementer had to guess.
    "numeric-sw-full": {  # U = 2^32 (§1.3): no word is redrawn, not even 2^32 − 1
        "mechanism": "numeric",
        "epsilon": 1.0,
        "lo": 0,
        "hi": 1,
        "buckets": 8,
        "values": [0.3, 0.95],
        "words": [[MAX], [0]],
    },
    "hh-utf8": {  # bytes: the device's level (4 bytes) cuts a character of the first two
        "mechanism": "hh",
        "epsilon": 4.0,
        "k": 2,
        "m": 32,
        "hash_seed": SEED,
        "max_length": 6,
        "values": ["日本", "xy€", "é"],
        "words": _words(12),
    },
    "cms-sealed-longitudinal": {  # §3.9's F leaves `sealed` out; §10's padded plaintexts
        "mechanism": "cms",
        "k": 3,
        "m": 16,
        "hash_seed": SEED,
        "sealed": True,
        "longitudinal": {"epsilon_inf": 4.0, "epsilon_1": 1.0},
        "values": ["hello", "naïve"],
        "words": _words(10),
    },
    # Protocol 1.1's dimensions (§11): public values in the clear beside the payload. A
    # report vector's "dimensions" is what the app gave; its dims the mapping to the lists.
    "grr-dimensions": {
        "mechanism": "grr",
        "epsilon": 2.0,
        "domain": ["red", "grün", "🔵"],
        "dimensions": DIMENSIONS,
        "values": ["red", "🔵", "grün"],
        "words": [[100], [457_443_992], [4_000_000_000]],
        "dimension_values": [
            {"platform": "ios", "app_version": "5.2", "city": "Zürich"},  # all listed
            {"platform": "iOS", "app_version": "5.4", "country": "de"},  # other ×3, dropped
            {"platform": "web", "app_version": "5.1", "city": "Zu\u0308rich"},  # not NFC'd
        ],
    },
    "cms-sealed-dimensions": {  # dims stay in the clear and are bound in §10's info
        "mechanism": "cms",
        "epsilon": 4.0,
        "k": 4,
        "m": 20,
        "hash_seed": SEED,
        "sealed": True,
        "dimensions": [{"name": "platform", "values": ["android", "ios", "web"]}],
        "min_slice_size": 200,
        "values": ["hello"],
        "words": _words(3),
        "dimension_values": [{"platform": "web"}],
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

# §10's padding, one vector per payload shape: the first report of each of these tasks.
PADDING_TASKS = ["rr", "grr", "olh", "cms", "hcms", "hh", "numeric-sw", "oue", "ss"]


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
