"""A group's array parameters in PostgreSQL's binary array format, built without psycopg.

psycopg adapts a Python list by looking at every element to choose the array's type, then
dumps each element through its dumper: measured with ``thread_time`` around
``PostgresQuery.convert`` on a 1-report group, 115 µs of the writer's 359 µs per commit
went there (the twelve parameters of one ``INGEST``), more than the statement's packing.
Here each column is written at once with :mod:`struct` into ``array_send``'s layout, and
psycopg passes the bytes through (:class:`PassThrough`), so a parameter costs one type
lookup.

The layout (PostgreSQL's ``array_send``, big-endian): dimensions (0 for an empty array,
else 1), a has-nulls flag (0: these columns have none), the element type's oid, then for
one dimension its length and lower bound (1), then each element as its byte length and
its binary value.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Sequence
from typing import Any

from psycopg.adapt import AdaptersMap, Dumper
from psycopg.pq import Format

_EMPTY = struct.Struct(">iii")
_ONE_DIMENSION = struct.Struct(">iiiii")
_LENGTH = struct.Struct(">i")


class BinaryArray(bytes):
    """An array already in binary form; subclasses name its type's oid."""

    oid = 0
    element_oid = 0


class TextArray(BinaryArray):
    oid, element_oid = 1009, 25


class ByteaArray(BinaryArray):
    oid, element_oid = 1001, 17


class Int8Array(BinaryArray):
    oid, element_oid = 1016, 20


class Int4Array(BinaryArray):
    oid, element_oid = 1007, 23


class BoolArray(BinaryArray):
    oid, element_oid = 1000, 16


@functools.lru_cache(maxsize=128)
def _fixed_layout(code: str, count: int) -> struct.Struct:
    """The header and ``count`` (length, value) cells of a fixed-size element type."""
    return struct.Struct(f">iiiii{code * count}")


def _fixed(kind: type[BinaryArray], code: str, size: int, values: Sequence[Any]) -> Any:
    count = len(values)
    if count == 0:
        return kind(_EMPTY.pack(0, 0, kind.element_oid))
    cells = [size] * (2 * count)
    cells[1::2] = values
    return kind(_fixed_layout(code, count).pack(1, 0, kind.element_oid, count, 1, *cells))


def _varying(kind: type[BinaryArray], values: Sequence[bytes]) -> Any:
    count = len(values)
    if count == 0:
        return kind(_EMPTY.pack(0, 0, kind.element_oid))
    head = _ONE_DIMENSION.pack(1, 0, kind.element_oid, count, 1)
    return kind(b"".join([head, *[c for v in values for c in (_LENGTH.pack(len(v)), v)]]))


def bytea_array(values: Sequence[bytes]) -> ByteaArray:
    """``bytea[]`` of the values."""
    return _varying(ByteaArray, values)


def text_array(values: Sequence[str]) -> TextArray:
    """``text[]`` of the values (UTF-8, the connections' encoding)."""
    return _varying(TextArray, [value.encode() for value in values])


def int8_array(values: Sequence[int]) -> Int8Array:
    """``int8[]`` of the values."""
    return _fixed(Int8Array, "iq", 8, values)


def int4_array(values: Sequence[int]) -> Int4Array:
    """``int4[]`` of the values."""
    return _fixed(Int4Array, "ii", 4, values)


def bool_array(values: Sequence[bool]) -> BoolArray:
    """``bool[]`` of the values."""
    return _fixed(BoolArray, "i?", 1, values)


class PassThrough(Dumper):
    """Sends a :class:`BinaryArray`'s bytes as they are, typed by its oid."""

    format = Format.BINARY

    def dump(self, obj: Any) -> bytes:
        return obj  # a BinaryArray is bytes: sent without a copy


def register(adapters: AdaptersMap) -> None:
    """Let the connection send every :class:`BinaryArray` kind as it is."""
    for kind in (TextArray, ByteaArray, Int8Array, Int4Array, BoolArray):
        dumper = type(f"{kind.__name__}Dumper", (PassThrough,), {"oid": kind.oid})
        adapters.register_dumper(kind, dumper)
