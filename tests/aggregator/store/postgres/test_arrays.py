"""The writer's arrays, built in PostgreSQL's binary format, read back as the values given."""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
import pytest

from ldp_telemetry.aggregator.store.postgres import arrays
from tests.support.postgres import PostgresServer

pytestmark = pytest.mark.timeout(60)

CASES: list[tuple[Callable[[Any], arrays.BinaryArray], str, Sequence[Any]]] = [
    (arrays.int8_array, "int8[]", [0, 1, -1, 2**63 - 1, -(2**63), 1_764_000_000]),
    (arrays.int4_array, "int4[]", [0, 7, -3, 2**31 - 1, -(2**31)]),
    (arrays.bool_array, "bool[]", [True, False, True]),
    (arrays.bytea_array, "bytea[]", [b"", b"\x00\xff" * 8, bytes(range(256)) * 40]),
    (arrays.text_array, "text[]", ["task-1", "", "tâche-ü-日本", "a" * 300]),
]


@pytest.mark.parametrize(("build", "sql_type", "values"), CASES, ids=[c[1] for c in CASES])
@pytest.mark.parametrize("size", [0, 1, 3, "all"])
def test_an_array_reads_back_as_built(
    postgres: PostgresServer,
    build: Callable[[Any], arrays.BinaryArray],
    sql_type: str,
    values: Sequence[Any],
    size: int | str,
) -> None:
    given = list(values) if size == "all" else list(values)[: int(size)]
    with psycopg.connect(postgres.admin_url, autocommit=True) as conn:
        arrays.register(conn.adapters)
        row = conn.execute(
            f"SELECT %b::{sql_type}, cardinality(%b::{sql_type})", (build(given), build(given))
        ).fetchone()
    assert row is not None
    read, count = row
    assert count == len(given)
    assert [bytes(v) if isinstance(v, memoryview) else v for v in read] == given


def test_a_value_out_of_range_is_refused_before_sending() -> None:
    with pytest.raises(struct.error):
        arrays.int4_array([2**31])
