"""Staged batches: accepted reports kept packed until they are folded into the sums.

Adding one batch of 500 CMS reports (m = 1,024) to the stored sums rewrites about 450
rows of 8 KiB each; keeping the same batch packed costs 65 KiB. So the store stages each
committed batch as its stacked payload arrays (numpy ``.npy`` bytes, no pickles) and folds a
task's staged reports in one pass once they pass a size bound, or before an estimate: each
row is rewritten once per fold instead of once per batch, and the staging area (hence
memory and disk) stays bounded whatever n is.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import astuple

import numpy as np

from shared import (
    CountMeanSketch,
    HadamardBatch,
    HadamardCountMeanSketch,
    Mechanism,
    SketchBatch,
)
from shared.codec import Payload

Batch = SketchBatch | HadamardBatch | np.ndarray


def stack(mechanism: Mechanism, payloads: Sequence[Payload]) -> Batch:
    """Return decoded payloads as the mechanism's batch (what ``add_many`` takes)."""
    if isinstance(mechanism, CountMeanSketch | HadamardCountMeanSketch):
        return mechanism.stack(payloads)  # type: ignore[arg-type]
    return np.fromiter((int(p) for p in payloads), dtype=np.int64,  # type: ignore[arg-type]
                       count=len(payloads))


def pack(batch: Batch) -> bytes:
    """Return a batch's arrays as bytes."""
    buffer = io.BytesIO()
    for array in _columns(batch):
        np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def unpack(mechanism: Mechanism, blobs: Sequence[bytes]) -> Batch:
    """Return one batch holding the reports of every packed batch, in order."""
    parts = []
    for blob in blobs:
        buffer = io.BytesIO(blob)
        parts.append([np.load(buffer, allow_pickle=False) for _ in range(_arity(mechanism))])
    columns = [np.concatenate(column) for column in zip(*parts, strict=True)]
    if isinstance(mechanism, CountMeanSketch):
        return SketchBatch(*columns)
    if isinstance(mechanism, HadamardCountMeanSketch):
        return HadamardBatch(*columns)
    return columns[0]


def _columns(batch: Batch) -> tuple[np.ndarray, ...]:
    return (batch,) if isinstance(batch, np.ndarray) else astuple(batch)


def _arity(mechanism: Mechanism) -> int:
    if isinstance(mechanism, CountMeanSketch):
        return 2  # rows, packed bits
    return 3 if isinstance(mechanism, HadamardCountMeanSketch) else 1
