"""What a fold writes (issue 38, a fold's cost): each stored row's counters as narrow as its
values allow and read back exactly, rows written as int64 before still read and merged,
and SQLite's sums kept through migration 0010 (rowid tables)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from ldp_telemetry.aggregator.store import StoredTask, counters
from ldp_telemetry.aggregator.store.base import SqlStore
from ldp_telemetry.aggregator.store.migrations import statements
from ldp_telemetry.aggregator.store.sqlite.backend import SqliteStore
from ldp_telemetry.aggregator.store.sqlite.migrations import SCHEMA
from ldp_telemetry.shared import TaskConfig
from tests.aggregator.store.cases import kind_reports
from tests.aggregator.stores import Stores
from tests.support.reports import envelopes

EDGES = [  # (a row's values, the bytes per counter it is stored in)
    ([0, 1, 127, -128], 1),
    ([0, 128], 2),
    ([-129, 5], 2),
    ([32_767, -32_768], 2),
    ([32_768, 0], 4),
    ([-(2**31), 2**31 - 1], 4),
    ([2**31, 0], 8),
    ([-(2**63), 2**63 - 1], 8),
]


@pytest.mark.parametrize(("values", "size"), EDGES)
def test_a_row_is_stored_in_the_narrowest_width_and_read_back_exactly(
    values: list[int], size: int
) -> None:
    row = np.array(values, dtype=np.int64)
    (blob,) = counters.encode(row[None, :])
    assert len(blob) == size * len(values)
    assert counters.decode([blob], len(values)).tolist() == [values]
    assert counters.decode_one(blob, len(values)).dtype == np.int64


def test_rows_of_several_widths_decode_together_in_their_order() -> None:
    block = np.array([[1, 2, 3], [300, 0, 0], [2**40, 1, -1], [-5, 6, 7]], dtype=np.int64)
    blobs = counters.encode(block)
    assert [len(b) for b in blobs] == [3, 6, 24, 3]
    blobs[3] = block[3].astype("<i8").tobytes()  # a row written as int64, as before
    assert np.array_equal(counters.decode(blobs, 3), block)
    with pytest.raises(ValueError, match="5 bytes"):
        counters.decode([b"\0" * 5], 3)


def _cms_task(task_id: str) -> TaskConfig:
    return TaskConfig.create(
        task_id=task_id, mechanism="cms", epsilon=4.0, k=16, m=64, min_batch_size=1
    )


def test_int64_rows_stored_before_are_merged_by_a_fold_exactly(
    stores: Stores, backend: str
) -> None:
    """A database whose rows hold int64 counters (every row before this change): a fold
    adds to them exactly, and the rows it rewrites come out narrow."""
    store: SqlStore = stores.open(backend)
    twin: SqlStore = stores.open(backend)
    task = _cms_task("t")
    for opened in (store, twin):
        opened.create_task(StoredTask(task))
    rng = np.random.default_rng(5)
    bucket = task.floor_time(1.7e9)
    first, second = kind_reports(task, 300, rng), kind_reports(task, 300, rng)
    for opened in (store, twin):
        opened.add_reports(task, envelopes(task, first, bucket), [0] * 300)
        opened.fold_staged(task)
    with store._write() as tx:  # widen every stored row to int64, as the store wrote them
        for table, key in (("sums", "bucket, slice, row"), ("rollup", "slice, row")):
            rows = list(tx.execute(f"SELECT {key}, counters FROM {table} WHERE task_id = 't'"))
            for *where, blob in rows:
                wide = counters.decode_one(bytes(blob), 64).astype("<i8").tobytes()
                cells = " AND ".join(f"{c.strip()} = ?" for c in key.split(","))
                tx.execute(
                    f"UPDATE {table} SET counters = ? WHERE task_id = 't' AND {cells}",
                    (wide, *where),
                )
    for opened in (store, twin):
        opened.add_reports(task, envelopes(task, second, bucket), [0] * 300)
        opened.fold_staged(task)
    got, expected = list(store.sum_rows(task)), list(twin.sum_rows(task))
    assert [r[:4] for r in got] == [r[:4] for r in expected]
    assert all(np.array_equal(a[4], b[4]) for a, b in zip(got, expected, strict=True))
    with store._read() as tx:
        sizes = {len(b) for (b,) in tx.execute("SELECT counters FROM sums WHERE task_id = 't'")}
    assert max(sizes) <= 64 * 2  # 600 reports over 16 rows: every counter fits int16
    with store.read_sums(task, None, None) as mine, twin.read_sums(task, None, None) as theirs:
        assert mine.total == theirs.total == 600


def test_sqlite_migration_0010_keeps_every_sums_and_rollup_row(tmp_path: Path) -> None:
    """A database at schema 9 (WITHOUT ROWID sums and roll-up, int64 counters) is migrated
    to rowid tables with the same rows, and the store reads and folds into them."""
    path = tmp_path / "v9.sqlite3"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT "
                 "NOT NULL, applied_at INTEGER NOT NULL)")  # fmt: skip
    for version, name, sql in SCHEMA.migrations():
        if version <= 9:
            for statement in statements(sql):
                conn.execute(statement)
            conn.execute("INSERT INTO schema_version VALUES (?, ?, 0)", (version, name))
    conn.close()
    made = SqliteStore(str(path))
    made.initialize()
    assert made.schema_change[0] == 9
    task = _cms_task("m")
    made.create_task(StoredTask(task))
    rng = np.random.default_rng(9)
    bucket = task.floor_time(1.7e9)
    reports = kind_reports(task, 200, rng)
    made.add_reports(task, envelopes(task, reports, bucket), [0] * 200)
    made.fold_staged(task)
    before = [(r[:4], r[4].tolist()) for r in made.sum_rows(task)]
    # rewind to 9: the tables as 0008 made them, every row int64, then migrate again
    conn = sqlite3.connect(path, isolation_level=None)
    for table, key in (("sums", "task_id, bucket, slice, row"), ("rollup", "task_id, slice, row")):
        columns = key + ", n, counters"
        types = ", ".join(f"{c} {'TEXT' if c == 'task_id' else 'INTEGER'} NOT NULL"
                          for c in key.split(", "))  # fmt: skip
        conn.execute(f"CREATE TABLE old ({types}, n INTEGER NOT NULL, counters BLOB NOT NULL, "
                     f"PRIMARY KEY ({key})) WITHOUT ROWID")  # fmt: skip
        rows = list(conn.execute(f"SELECT {columns} FROM {table}"))
        width = task.mechanism_object.sums_shape[1]
        conn.executemany(
            f"INSERT INTO old VALUES ({','.join('?' * (len(key.split(', ')) + 2))})",
            [(*r[:-1], counters.decode_one(r[-1], width).astype("<i8").tobytes()) for r in rows],
        )
        conn.execute(f"DROP TABLE {table}")
        conn.execute(f"ALTER TABLE old RENAME TO {table}")
    conn.execute("DELETE FROM schema_version WHERE version = 10")
    conn.close()
    again = SqliteStore(str(path))
    again.initialize()
    assert again.schema_change == (9, 10)
    assert [(r[:4], r[4].tolist()) for r in again.sum_rows(task)] == before
    conn = sqlite3.connect(path)
    (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'sums'").fetchone()
    conn.close()
    assert "WITHOUT ROWID" not in sql and "UNIQUE" in sql
    with again.read_sums(task, None, None) as read:
        assert read.total == 200
