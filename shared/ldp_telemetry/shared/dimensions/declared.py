"""A task's declared dimensions: parse and check them, coarsen values, number the slices.

Symbols: a task declares dimensions 0..D−1 (D ≤ 3) in order; dimension j has the list
``values_j`` and the implicit value ``other`` after it, so nⱼ = len(values_j) + 1 values.
A slice is one value of each; its index is the mixed-radix number of the value indices,
most significant first: index = ((i₀·n₁) + i₁)·n₂ + i₂ (PROTOCOL.md §1.1). A task without
dimensions has the single slice 0.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from itertools import product
from typing import Any

from ldp_telemetry.shared.contract import (
    DIMENSION_UNDECLARED,
    DIMENSION_VALUE_UNKNOWN,
    DIMENSIONS_MISSING,
)
from ldp_telemetry.shared.errors import DecodeError, ParameterError

OTHER = "other"  # every dimension's implicit last value
MAX_DIMENSIONS = 3  # combinations fingerprint a device: few dimensions, small lists
MAX_VALUES = 63  # declared per dimension (64 with other)
MAX_VALUE_CHARS = 64
NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # C0, DEL and C1
DEFAULT_MAX_SLICES = 64  # the collector's MAX_SLICES default
DEFAULT_MIN_SLICE_SIZE = 50  # Brave's K (docs/design.md, Breakdowns)
MAX_MIN_SLICE_SIZE = 10**9


def default_min_slice_size(min_batch_size: int) -> int:
    """Return a task's min_slice_size when none is given: max(50, min_batch_size)."""
    return max(DEFAULT_MIN_SLICE_SIZE, min_batch_size)


@dataclass(frozen=True)
class Dimension:
    """One declared dimension: its name and closed list of values (``other`` implied)."""

    name: str
    values: tuple[str, ...]

    @property
    def radix(self) -> int:
        """Return the number of its values, ``other`` included."""
        return len(self.values) + 1

    @functools.cached_property
    def indices(self) -> dict[str, int]:
        """Return each value's index, ``other`` last."""
        return {**{value: i for i, value in enumerate(self.values)}, OTHER: len(self.values)}

    def value_at(self, index: int) -> str:
        """Return the value at ``index`` (``other`` at len(values))."""
        return self.values[index] if index < len(self.values) else OTHER

    def to_json(self) -> dict[str, Any]:
        """Return its entry in the task's ``dimensions`` list."""
        return {"name": self.name, "values": list(self.values)}


@dataclass(frozen=True)
class Dimensions:
    """A task's declared dimensions, in order; build them with :meth:`parse`."""

    declared: tuple[Dimension, ...]

    @classmethod
    def parse(cls, data: Any) -> Dimensions:
        """Return the dimensions a task's ``dimensions`` field declares, or raise
        ParameterError naming the rule broken (PROTOCOL.md §1.1)."""
        if isinstance(data, Dimensions):
            return data
        if not isinstance(data, (list, tuple)) or not 1 <= len(data) <= MAX_DIMENSIONS:
            raise ParameterError(
                f"dimensions must be a list of 1 to {MAX_DIMENSIONS} objects "
                '{"name": ..., "values": [...]}'
            )
        declared = tuple(_parse_dimension(entry) for entry in data)
        names = [dimension.name for dimension in declared]
        if len(set(names)) != len(names):
            raise ParameterError(f"dimension names must be distinct, got {names}")
        return cls(declared)

    def to_json(self) -> list[dict[str, Any]]:
        """Return the task's ``dimensions`` field."""
        return [dimension.to_json() for dimension in self.declared]

    @functools.cached_property
    def names(self) -> tuple[str, ...]:
        """Return the declared names, in order."""
        return tuple(dimension.name for dimension in self.declared)

    @functools.cached_property
    def _radices(self) -> tuple[tuple[str, dict[str, int], int], ...]:
        """Return (name, value indices, radix) per dimension: what a report's check reads."""
        return tuple((d.name, d.indices, d.radix) for d in self.declared)

    @functools.cached_property
    def slice_count(self) -> int:
        """Return the number of slices: the product of the lists' sizes, ``other`` included."""
        return math.prod(dimension.radix for dimension in self.declared)

    def check_slice_count(self, limit: int) -> None:
        """Raise ParameterError if the task has more slices than ``limit`` (MAX_SLICES)."""
        if self.slice_count > limit:
            sizes = " × ".join(str(dimension.radix) for dimension in self.declared)
            raise ParameterError(
                f"the dimensions make {sizes} = {self.slice_count} slices (each list's values "
                f"and other); this collector allows at most {limit} (MAX_SLICES): shorten the "
                "lists or declare fewer dimensions"
            )

    def coarsen(self, given: Mapping[str, object] | None) -> dict[str, str]:
        """Return the ``dims`` a device sends for the values it was given.

        Each declared name maps to its given value if that is in the task's list, else to
        ``other`` (an absent name too); names the task does not declare are dropped, so a
        free-form string never leaves the device.
        """
        given = given or {}
        return {
            dimension.name: value
            if isinstance(value := given.get(dimension.name), str) and value in dimension.values
            else OTHER
            for dimension in self.declared
        }

    def slice_of(self, values: Mapping[str, str]) -> int:
        """Return the index of the slice whose values are given (every name, known values)."""
        index = 0
        for dimension in self.declared:
            value = values[dimension.name]
            position = dimension.indices.get(value)
            if position is None:
                raise ParameterError(f"{_shown(value)} is not a value of {dimension.name!r}")
            index = index * dimension.radix + position
        return index

    def slice_of_report(self, dims: Any) -> int:
        """Return the slice of a report's ``dims``, or raise DecodeError with its reason:
        ``dimension_undeclared``, then ``dimensions_missing``, then
        ``dimension_value_unknown`` (PROTOCOL.md §2)."""
        if type(dims) is dict and len(dims) == len(self.declared):  # a device's: one pass
            index = 0
            for name, indices, radix in self._radices:
                value = dims.get(name)
                position = indices.get(value) if type(value) is str else None
                if position is None:
                    break
                index = index * radix + position
            else:
                return index
        return self._refuse(dims)

    def _refuse(self, dims: Any) -> int:
        """Raise the reason a report's ``dims`` are refused (the slow path, with messages)."""
        if dims is None:
            raise DecodeError(
                f"this task declares dimensions {list(self.names)}: a report carries dims",
                reason=DIMENSIONS_MISSING,
            )
        if type(dims) is not dict:
            raise DecodeError('dims must be a JSON object {"name": "value", ...}')
        undeclared = [name for name in dims if name not in self.names]
        if undeclared:
            raise DecodeError(
                f"dims names {sorted(map(str, undeclared))} the task does not declare "
                f"(it declares {list(self.names)})",
                reason=DIMENSION_UNDECLARED,
            )
        index = 0
        for dimension in self.declared:
            if dimension.name not in dims:
                raise DecodeError(f"dims has no {dimension.name!r}", reason=DIMENSIONS_MISSING)
            value = dims[dimension.name]
            position = dimension.indices.get(value) if type(value) is str else None
            if position is None:
                raise DecodeError(
                    f"dims {dimension.name!r} must be one of {list(dimension.values)} or "
                    f"{OTHER!r}, got {_shown(value)}",
                    reason=DIMENSION_VALUE_UNKNOWN,
                )
            index = index * dimension.radix + position
        return index

    def values_of(self, index: int) -> dict[str, str]:
        """Return the values of the slice at ``index`` (the inverse of :meth:`slice_of`)."""
        if isinstance(index, bool) or not isinstance(index, int):
            raise ParameterError(f"a slice index is an integer, got {type(index).__name__}")
        if not 0 <= index < self.slice_count:
            raise ParameterError(f"slice index must be in [0, {self.slice_count}), got {index}")
        positions = []
        for dimension in reversed(self.declared):
            index, position = divmod(index, dimension.radix)
            positions.append(dimension.value_at(position))
        return dict(zip(self.names, reversed(positions), strict=True))

    def matching(self, where: Mapping[str, str] | None = None) -> list[int]:
        """Return the slice indices, ascending, whose values agree with ``where``."""
        chosen = self._positions(where or {})
        return [self._index(positions) for positions in product(*chosen)]

    def grouped(
        self, group_by: Sequence[str] = (), where: Mapping[str, str] | None = None
    ) -> dict[tuple[str, ...], list[int]]:
        """Return, per combination of the ``group_by`` dimensions' values (in their order,
        ``other`` last), the slice indices that hold it and agree with ``where``."""
        self.check_names(group_by, "group_by")
        if len(set(group_by)) != len(group_by):
            raise ParameterError(f"group_by names a dimension twice: {list(group_by)}")
        at = [self.names.index(name) for name in group_by]
        groups: dict[tuple[int, ...], list[int]] = {}
        # product() walks the value indices in slice order (the first dimension varies slowest)
        for positions in product(*self._positions(where or {})):
            groups.setdefault(tuple(positions[i] for i in at), []).append(self._index(positions))
        return {
            tuple(self.declared[i].value_at(p) for i, p in zip(at, key, strict=True)): groups[key]
            for key in sorted(groups)
        }

    def check_names(self, names: Collection[str], what: str) -> None:
        """Raise ParameterError if ``names`` (a query's ``what``) holds an undeclared name."""
        unknown = [name for name in names if name not in self.names]
        if unknown:
            raise ParameterError(
                f"{what} names {[_shown(name) for name in unknown]}, which the task does not "
                f"declare; its dimensions are {list(self.names)}"
            )

    def _positions(self, where: Mapping[str, str]) -> list[range | tuple[int]]:
        """Return, per dimension, the value indices ``where`` allows."""
        self.check_names(where, "where")
        chosen: list[range | tuple[int]] = []
        for dimension in self.declared:
            if dimension.name not in where:
                chosen.append(range(dimension.radix))
                continue
            value = where[dimension.name]
            position = dimension.indices.get(value) if isinstance(value, str) else None
            if position is None:
                raise ParameterError(
                    f"where {dimension.name!r} must be one of {list(dimension.values)} or "
                    f"{OTHER!r}, got {_shown(value)}"
                )
            chosen.append((position,))
        return chosen

    def _index(self, positions: Sequence[int]) -> int:
        index = 0
        for (_, _, radix), position in zip(self._radices, positions, strict=True):
            index = index * radix + position
        return index


def _parse_dimension(entry: Any) -> Dimension:
    """Return one declared dimension, or raise ParameterError naming the rule broken."""
    if not isinstance(entry, Mapping) or set(entry) != {"name", "values"}:
        raise ParameterError('each dimension is an object {"name": ..., "values": [...]}')
    name, values = entry["name"], entry["values"]
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ParameterError(
            "a dimension name is 1-32 characters a-z, 0-9 or '_', starting with a letter, "
            f"got {_shown(name)}"
        )
    if not isinstance(values, (list, tuple)) or not 1 <= len(values) <= MAX_VALUES:
        raise ParameterError(f"dimension {name!r}: values must be a list of 1 to {MAX_VALUES}")
    for value in values:
        if not isinstance(value, str) or not 1 <= len(value) <= MAX_VALUE_CHARS:
            raise ParameterError(
                f"dimension {name!r}: each value is a string of 1 to {MAX_VALUE_CHARS} "
                f"characters, got {_shown(value)}"
            )
        if CONTROL.search(value):
            raise ParameterError(f"dimension {name!r}: value {value!r} holds a control character")
        if value == OTHER:
            raise ParameterError(
                f"dimension {name!r}: {OTHER!r} is implicit (every value not in the list); "
                "leave it out"
            )
    if len(set(values)) != len(values):
        raise ParameterError(f"dimension {name!r}: values must be distinct")
    return Dimension(name, tuple(values))


def _shown(value: object) -> str:
    """Return a value for an error message, cut short (it may come from anyone)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
