"""The values and reports both sides are measured on, and the files handing them over."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ldp_telemetry.shared import HadamardBatch, SketchBatch

UNIVERSE = 50_000  # distinct values the Zipf workload draws from


def zipf_values(count: int, rng: np.random.Generator) -> list[str]:
    """Return ``count`` values with a Zipf(1.3) popularity, like real telemetry strings."""
    return [f"item-{int(i)}" for i in rng.zipf(1.3, count) % UNIVERSE]


def accuracy_values(count: int, target: int, rng: np.random.Generator) -> list[str]:
    """Return ``count`` values of which ``target`` are "target" and the rest Zipf items."""
    values = ["target"] * target + zipf_values(count - target, rng)
    return [values[i] for i in rng.permutation(count)]


def write_json(folder: Path, name: str, data: Any) -> str:
    """Write ``data`` as ``folder/name`` and return the name (the spec refers to files)."""
    (folder / name).write_text(json.dumps(data), encoding="utf-8")
    return name


def write_reports(folder: Path, name: str, batch: SketchBatch | HadamardBatch) -> str:
    """Save a batch of privatized reports as .npz arrays (rows, bits and HCMS columns)."""
    if isinstance(batch, HadamardBatch):
        np.savez(folder / name, rows=batch.rows, bits=batch.bits, cols=batch.cols)
    else:
        np.savez(folder / name, rows=batch.rows, bits=batch.bits)
    return name
