"""Golden vectors of the wire protocol: fixed inputs and what this implementation makes of them.

``python tests/protocol/vectors.py`` prints them; ``--write`` regenerates vectors.json
(refused when it exists, unless ``--force``: a change there is a protocol change).
tests/protocol/test_protocol.py checks the implementation against the committed file, and
the independent client against the same file.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # run as a script from anywhere

from shared import Envelope, TaskConfig, encode_batch  # noqa: E402
from shared.hashing import RowHashes, splitmix64, value_key  # noqa: E402
from shared.mechanisms.cms import SketchReport  # noqa: E402
from shared.mechanisms.hcms import HadamardReport  # noqa: E402
from shared.mechanisms.olh import HashedReport  # noqa: E402
from shared.task import PUBLISHED  # noqa: E402

FILE = Path(__file__).with_name("vectors.json")
SEED = 3651556171
VALUES = ["hello", "", "naïve", "😂", "a much longer value with spaces"]
REPORT_ID = bytes(range(16))
TIME = 1764028800

DIGITS = [str(i) for i in range(10)]
TASKS: list[dict[str, Any]] = [
    {"task_id": "yes-no", "mechanism": "rr", "epsilon": 1.0986122886681098},
    {"task_id": "yes-no-ab", "mechanism": "rr", "alpha": 0.5, "beta": 0.25},
    {
        "task_id": "colours",
        "mechanism": "grr",
        "epsilon": 2.0,
        "domain": ["red", "grün", "🔵"],
        "time_precision": 3600,
        "min_batch_size": 10,
    },
    {"task_id": "words", "mechanism": "cms", "epsilon": 4.0, "k": 4, "m": 20, "hash_seed": SEED},
    {"task_id": "words-h", "mechanism": "hcms", "epsilon": 4.0, "k": 4, "m": 16, "hash_seed": SEED},
    {"task_id": "words-o", "mechanism": "olh", "epsilon": 3.0, "k": 4, "hash_seed": SEED},
    {"task_id": "levels-u", "mechanism": "oue", "epsilon": 1.0, "domain": DIGITS},
    {"task_id": "levels-s", "mechanism": "ss", "epsilon": 1.0, "domain": DIGITS},
]
# One fixed report per task (the noise drawn is a device's business; its encoding is not).
REPORTS: dict[str, Any] = {
    "yes-no": 1,
    "yes-no-ab": 0,
    "colours": 2,
    "words": SketchReport(3, bytes([0b10100000, 0, 0b00010000])),
    "words-h": HadamardReport(2, 13, 1),
    "words-o": HashedReport(1, 17),
    "levels-u": bytes([0b10000000, 0b01000000]),  # bits 0 and 9 of d = 10
    "levels-s": (2, 5, 9),  # omega = 3 at d = 10, epsilon = 1
}


def build() -> dict[str, Any]:
    """Return every vector, as JSON-ready data (64-bit numbers as hex strings)."""
    family = RowHashes(SEED, 4, 1000)
    out: dict[str, Any] = {
        "splitmix64": {"seed": SEED, "words": [f"{w:016x}" for w in splitmix64(SEED, 8)]},
        "row_constants": {
            "seed": SEED,
            "k": 4,
            "a": [f"{int(a):016x}" for a in family.a],
            "b": [f"{int(b):016x}" for b in family.b],
        },
        "keys": [
            {
                "value": v,
                "utf8_hex": v.encode().hex(),
                "seed": SEED,
                "key": f"{value_key(v, SEED):016x}",
            }
            for v in VALUES
        ],
        "buckets": [],
        "tasks": [],
    }
    for m in (1000, 1024, 16, 20):
        hashes = RowHashes(SEED, 4, m)
        for v in VALUES:
            key = value_key(v, SEED)
            out["buckets"].append(
                {
                    "value": v,
                    "seed": SEED,
                    "m": m,
                    "rows": [hashes.bucket(key, j) for j in range(4)],
                }
            )
    for spec in TASKS:
        task = TaskConfig(**spec)
        fields = {k: v for k, v in task.to_dict().items() if k not in ("fingerprint", *PUBLISHED)}
        canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"))
        body = encode_batch(
            task, [Envelope(REPORT_ID, task.fingerprint, TIME, REPORTS[task.task_id])]
        )
        out["tasks"].append(
            {
                "task": task.to_dict(),
                "canonical_json": canonical,
                "fingerprint": task.fingerprint,
                "batch_body": body.decode(),
            }
        )
    out["thresholds"] = thresholds()
    return out


def thresholds() -> list[dict[str, Any]]:
    """The 32-bit thresholds each mechanism's probabilities become, for a few ε."""
    rows = []
    for epsilon in (0.5, 1.0, 2.0, 4.0, 8.0):
        mechanisms = {
            "rr": TaskConfig(task_id="t", mechanism="rr", epsilon=epsilon).mechanism_object,
            "grr": TaskConfig(
                task_id="t", mechanism="grr", epsilon=epsilon, domain=["a", "b", "c"]
            ).mechanism_object,
            "cms": TaskConfig(
                task_id="t", mechanism="cms", epsilon=epsilon, k=1, m=8, hash_seed=0
            ).mechanism_object,
            "hcms": TaskConfig(
                task_id="t", mechanism="hcms", epsilon=epsilon, k=1, m=8, hash_seed=0
            ).mechanism_object,
            "olh": TaskConfig(
                task_id="t", mechanism="olh", epsilon=epsilon, k=1, hash_seed=0
            ).mechanism_object,
            "oue": TaskConfig(
                task_id="t", mechanism="oue", epsilon=epsilon, domain=DIGITS
            ).mechanism_object,
            "ss": TaskConfig(
                task_id="t", mechanism="ss", epsilon=epsilon, domain=DIGITS
            ).mechanism_object,
        }
        m: Any = mechanisms
        rows.append(
            {
                "epsilon": epsilon,
                "rr_lie": int(m["rr"].threshold_no),
                "grr_d3_other": int(m["grr"].threshold_other),
                "cms_flip": int(m["cms"].flip_threshold),
                "hcms_flip": int(m["hcms"].flip_threshold),
                "olh_g": int(m["olh"].g),
                "olh_other": int(m["olh"].threshold_other),
                "oue_other": int(m["oue"].threshold_other),
                "ss_d10_size": int(m["ss"].omega),
                "ss_d10_exclude": int(m["ss"].threshold_out),
            }
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help="write vectors.json")
    parser.add_argument("--force", action="store_true", help="overwrite vectors.json")
    args = parser.parse_args()
    text = json.dumps(build(), indent=1, ensure_ascii=False) + "\n"
    if not args.write:
        print(text, end="")
        return 0
    if FILE.exists() and not args.force:
        print(f"{FILE} exists: a change there changes the protocol; add --force", file=sys.stderr)
        return 1
    FILE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    np.seterr(all="raise")
    sys.exit(main())
