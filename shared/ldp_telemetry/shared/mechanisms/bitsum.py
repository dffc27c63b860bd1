"""Per-row sums of packed bit vectors: the count-mean sketch's aggregation hot path.

A CMS report is a row j and m bits packed by ``np.packbits``; the server adds bit c into
the int64 counter U[j, c]. Summing unpacked bits in int64 moves 8 bytes per bit and
numpy's segment reductions (``add.reduceat`` over axis 0) are slow, so reports are summed
per row in uint8 counters, which cannot overflow while a row gets at most 255 reports per
round, and only each round's counts are added into the int64 table.

To make every addition one dense vector operation the reports are grouped by row, the
groups ordered by size (largest first), and laid out layer by layer: the first report of
every group, then the second report of every group that has one, and so on. Layer l of
groups [g0, g1) is then one contiguous slice, unpacked and added to the groups' counters.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_LAYERS = 255  # the largest count a uint8 counter holds
GROUP_BLOCK = 256  # groups counted together: their counters (256 KiB at m = 1024) stay in cache


@dataclass(frozen=True)
class _Layout:
    """Reports of a batch grouped by row, largest group first, stored layer by layer."""

    packed: np.ndarray  # (n, ceil(m/8)) packed reports in layer order
    group_rows: np.ndarray  # (groups,) table row of each group
    group_sizes: np.ndarray  # (groups,) non-increasing
    layer_width: np.ndarray  # (layers,) groups with at least l + 1 reports
    layer_start: np.ndarray  # (layers,) offset of layer l in ``packed``


def add_bit_rows(table: np.ndarray, rows: np.ndarray, packed: np.ndarray) -> None:
    """Add bit c of ``packed[i]`` (np.packbits order) into ``table[rows[i], c]`` for each i.

    ``table`` is an int64 (rows, m) array, ``packed`` a uint8 (n, ceil(m/8)) array and
    ``rows`` n integers in [0, len(table)); bits past m are ignored.
    """
    if len(rows) == 0:
        return
    rows = np.asarray(rows)
    if rows.min() < 0 or rows.max() >= len(table):
        raise IndexError(f"report rows must be in [0, {len(table)})")
    layout = _layout(rows, np.asarray(packed, dtype=np.uint8), len(table))
    groups = len(layout.group_rows)
    for first in range(0, groups, GROUP_BLOCK):
        last = min(first + GROUP_BLOCK, groups)
        counts = np.zeros((last - first, 8 * layout.packed.shape[1]), dtype=np.uint8)
        for layer in range(int(layout.group_sizes[first])):
            width = min(last, int(layout.layer_width[layer])) - first
            start = int(layout.layer_start[layer]) + first
            counts[:width] += np.unpackbits(layout.packed[start : start + width], axis=1)
            if layer % MAX_LAYERS == MAX_LAYERS - 1:
                _flush(table, layout.group_rows[first:last], counts)
        _flush(table, layout.group_rows[first:last], counts)


def _layout(rows: np.ndarray, packed: np.ndarray, table_rows: int) -> _Layout:
    """Group reports by row and store them layer by layer (see the module docstring)."""
    # A stable sort of 16-bit keys is a radix sort: ten times faster than on int64.
    keys = rows.astype(np.uint16 if table_rows <= 1 << 16 else np.int64, copy=False)
    order = np.argsort(keys, kind="stable")
    sorted_rows = rows[order]
    starts = np.flatnonzero(np.diff(sorted_rows, prepend=-1))
    sizes = np.diff(starts, append=len(rows))
    by_size = np.argsort(-sizes, kind="stable")
    group_sizes = sizes[by_size]
    rank_of_group = np.empty_like(by_size)
    rank_of_group[by_size] = np.arange(len(by_size))
    # layer_width[l] = number of groups with more than l reports (sizes are non-increasing).
    layer_width = np.searchsorted(-group_sizes, -np.arange(1, group_sizes[0] + 1), side="right")
    layer_start = np.concatenate(([0], np.cumsum(layer_width)[:-1]))
    group = np.repeat(np.arange(len(sizes)), sizes)
    depth = np.arange(len(rows)) - starts[group]
    position = np.empty_like(order)
    position[layer_start[depth] + rank_of_group[group]] = order
    return _Layout(
        packed[position], sorted_rows[starts[by_size]], group_sizes, layer_width, layer_start
    )


def _flush(table: np.ndarray, group_rows: np.ndarray, counts: np.ndarray) -> None:
    """Add one round of uint8 counts into the table's rows (distinct) and zero them."""
    table[group_rows] += counts[:, : table.shape[1]]
    counts[...] = 0
