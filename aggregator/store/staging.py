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
from dataclasses import fields

import numpy as np

from shared.codec import Payload
from shared.mechanisms.base import Batch, Mechanism


def stack(mechanism: Mechanism, payloads: Sequence[Payload]) -> Batch:
    """Return decoded payloads as the mechanism's batch (what ``add_many`` takes)."""
    return mechanism.stack(payloads)


def pack(batch: Batch) -> bytes:
    """Return a batch's arrays as bytes."""
    buffer = io.BytesIO()
    for array in columns(batch):
        np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def unpack(mechanism: Mechanism, blobs: Sequence[bytes]) -> Batch:
    """Return one batch holding the reports of every packed batch, in order."""
    arity = len(column_names(mechanism))
    parts = []
    for blob in blobs:
        buffer = io.BytesIO(blob)
        parts.append([np.load(buffer, allow_pickle=False) for _ in range(arity)])
    return from_columns(mechanism, [np.concatenate(column) for column in zip(*parts, strict=True)])


def column_names(mechanism: Mechanism) -> list[str]:
    """Return the names of a mechanism's batch arrays (``value`` for a bare array)."""
    empty = stack(mechanism, ())
    if isinstance(empty, np.ndarray):
        return ["value"]
    return [column.name for column in fields(empty)]


def from_columns(mechanism: Mechanism, columns: Sequence[np.ndarray]) -> Batch:
    """Return the mechanism's batch made of these arrays (in ``column_names`` order)."""
    empty = stack(mechanism, ())
    return columns[0] if isinstance(empty, np.ndarray) else type(empty)(*columns)


def columns(batch: Batch) -> tuple[np.ndarray, ...]:
    """Return a batch's arrays, in ``column_names`` order."""
    # Not dataclasses.astuple: it deep-copies every array.
    if isinstance(batch, np.ndarray):
        return (batch,)
    return tuple(getattr(batch, column.name) for column in fields(batch))
