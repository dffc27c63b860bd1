"""A stored row's counters: little-endian integers as narrow as its values allow.

A sums or roll-up row holds one sketch row's ``width`` counters. Stored as int64 (what the
stores wrote until this module), a CMS row of m = 1,024 is an 8 KiB blob: more than a SQLite
page (4 KiB), so every write of it also rewrote an overflow chain, and a fold of a task with
20 slices rewrote up to 20 × 2 such rows per sketch row (issue 38: 12.8× the fold time of
the same reports without dimensions). Yet a bucket's counters of one slice are at most its
reports in that row: they fit a byte or two. So each row is written in the narrowest of
int8, int16, int32 and int64 that holds all its values, and the blob's length says which
(``len(blob) == width × itemsize``; the width is the task's, fixed). Rows written as int64
before (or by a value that needs it) read as they always did: no migration. Every value is
kept exactly; a row decodes to the same int64 counters it was encoded from.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

WIDTHS: tuple[np.dtype, ...] = tuple(np.dtype(code) for code in ("<i1", "<i2", "<i4", "<i8"))
_BY_SIZE = {dtype.itemsize: dtype for dtype in WIDTHS}
_LIMITS = [(int(np.iinfo(d).min), int(np.iinfo(d).max)) for d in WIDTHS[:-1]]


def encode(block: np.ndarray) -> list[bytes]:
    """Return each row of an int64 ``block`` (rows, width) as the narrowest blob holding it."""
    block = np.asarray(block, dtype=np.int64)
    if len(block) == 0:
        return []
    low, high = block.min(axis=1), block.max(axis=1)
    chosen = np.full(len(block), 3, dtype=np.int8)  # index into WIDTHS: int64 unless narrower
    for index in range(len(_LIMITS) - 1, -1, -1):
        lo, hi = _LIMITS[index]
        chosen[(low >= lo) & (high <= hi)] = index
    blobs: list[bytes] = [b""] * len(block)
    width = block.shape[1]
    for index, dtype in enumerate(WIDTHS):
        at = np.flatnonzero(chosen == index).tolist()
        if at:
            rows = block if len(at) == len(block) else block[at]  # usually one width for all
            data, size = rows.astype(dtype).tobytes(), width * dtype.itemsize
            for offset, position in zip(range(0, len(data), size), at, strict=True):
                blobs[position] = data[offset : offset + size]
    return blobs


def decode(blobs: Sequence[bytes], width: int) -> np.ndarray:
    """Return stored blobs as an int64 array (len(blobs), width), each row exactly its values.

    Raises ValueError for a blob whose length is not ``width`` × 1, 2, 4 or 8.
    """
    out = np.empty((len(blobs), width), dtype=np.int64)
    if not blobs:
        return out
    sizes = np.fromiter((len(b) for b in blobs), dtype=np.int64, count=len(blobs))
    for size in np.unique(sizes).tolist():
        dtype = _BY_SIZE.get(size // width) if width and size % width == 0 else None
        if dtype is None:
            raise ValueError(f"a stored row of {size} bytes is not {width} counters")
        at = np.flatnonzero(sizes == size)
        joined = b"".join(bytes(blobs[i]) for i in at.tolist())
        values = np.frombuffer(joined, dtype=dtype).reshape(len(at), width)
        if len(at) == len(blobs):
            out[:] = values
        else:
            out[at] = values
    return out


def decode_one(blob: bytes, width: int) -> np.ndarray:
    """Return one stored blob's counters as int64 (width,)."""
    return decode([blob], width)[0]
