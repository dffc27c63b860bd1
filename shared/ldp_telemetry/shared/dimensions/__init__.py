"""Public dimensions of a task (PROTOCOL.md §§1.1, 2): declared closed lists, their slices.

A task may declare up to 3 dimensions, each a closed list of values; ``other`` is implicit
and last. A report carries its device's value of each in the clear (``dims``): they are
public, not protected by LDP. The one place that parses and checks a declaration, maps a
device's free-form values onto the lists (:meth:`Dimensions.coarsen`), checks a report's
``dims`` (:meth:`Dimensions.slice_of_report`), numbers the slices and answers which slices a
query's ``where`` and ``group_by`` select. Nothing else re-implements these.
"""

from __future__ import annotations

from ldp_telemetry.shared.dimensions.declared import (
    DEFAULT_MAX_SLICES,
    DEFAULT_MIN_SLICE_SIZE,
    MAX_DIMENSIONS,
    MAX_MIN_SLICE_SIZE,
    MAX_VALUES,
    OTHER,
    Dimension,
    Dimensions,
    default_min_slice_size,
)

__all__ = [
    "DEFAULT_MAX_SLICES",
    "DEFAULT_MIN_SLICE_SIZE",
    "MAX_DIMENSIONS",
    "MAX_MIN_SLICE_SIZE",
    "MAX_VALUES",
    "OTHER",
    "Dimension",
    "Dimensions",
    "default_min_slice_size",
]
