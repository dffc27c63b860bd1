"""The stores (SQLite and PostgreSQL, every registered kind) and the row-sparse folding.

Sums read back from a store must equal the shared accumulator of the same reports, on both
backends, for every kind in the registry, whether the reports were folded or still staged.
"""

from __future__ import annotations

import io
import itertools
import sqlite3
import tracemalloc
from dataclasses import astuple
from pathlib import Path

import numpy as np
import pytest

from ldp_telemetry.aggregator.core.admission import admit
from ldp_telemetry.aggregator.store import StoredTask
from ldp_telemetry.aggregator.store.base import SqlStore
from ldp_telemetry.aggregator.store.folding import fold, fold_parts
from ldp_telemetry.aggregator.store.sqlite.backend import SqliteStore
from ldp_telemetry.aggregator.store.staging import Batch, pack, stack, unpack
from ldp_telemetry.shared import TaskConfig
from ldp_telemetry.shared.mechanisms.registry import MECHANISMS
from tests.aggregator.store.cases import CASES, dense_sums, kind_reports, kind_task
from tests.aggregator.stores import Stores
from tests.support.reports import envelopes, payloads

DAY = 86_400
WORDS = [f"w{i % 37}" for i in range(700)]


def sketch_task(mechanism: str, k: int = 64, m: int = 32) -> TaskConfig:
    return TaskConfig.create(
        task_id=f"s-{mechanism}-{k}", mechanism=mechanism, epsilon=3.0, k=k, m=m, min_batch_size=1
    )


@pytest.mark.parametrize("mechanism", ["cms", "hcms"])
def test_fold_touches_only_hit_rows_and_matches_the_dense_sums(mechanism: str) -> None:
    task = sketch_task(mechanism)
    reports = payloads(task, WORDS[:50], np.random.default_rng(0))
    folded = fold(task.mechanism_object, stack(task.mechanism_object, reports))
    dense = task.mechanism_object.new_sums()
    dense.add_many(task.mechanism_object.stack(reports))
    assert set(folded.rows) == {r.row for r in reports}
    assert np.array_equal(dense.n[folded.rows], folded.n)
    assert np.array_equal(dense.table[folded.rows], folded.table)
    assert dense.total == len(reports)


@pytest.mark.parametrize("mechanism", ["cms", "hcms"])
def test_folding_in_row_blocks_gives_the_same_sums(mechanism: str) -> None:
    task = sketch_task(mechanism)
    batch = stack(task.mechanism_object, payloads(task, WORDS, np.random.default_rng(6)))
    whole = fold(task.mechanism_object, batch)
    parts = list(fold_parts(task.mechanism_object, batch, rows_per_part=10))
    assert len(parts) == 7  # rows 0-63 in blocks of 10
    assert all(len(part.rows) <= 10 for part in parts)
    assert np.array_equal(np.concatenate([p.rows for p in parts]), whole.rows)
    assert np.array_equal(np.concatenate([p.table for p in parts]), whole.table)
    assert np.array_equal(np.concatenate([p.n for p in parts]), whole.n)


def test_every_registered_kind_has_a_store_case() -> None:
    assert set(CASES) == set(MECHANISMS)


@pytest.mark.parametrize("kind", MECHANISMS)
def test_packed_batches_unpack_to_the_same_reports(kind: str) -> None:
    task = kind_task(kind)
    reports = kind_reports(task, 12, np.random.default_rng(4))
    mechanism_object = task.mechanism_object
    halves = [pack(stack(mechanism_object, part)) for part in (reports[:3], reports[3:])]
    both, whole = unpack(mechanism_object, halves), stack(mechanism_object, reports)
    assert type(both) is type(whole)
    for got, expected in zip(columns(both), columns(whole), strict=True):
        assert got.dtype == expected.dtype and np.array_equal(got, expected)


@pytest.mark.parametrize("kind", MECHANISMS)
def test_batches_packed_by_np_save_before_still_unpack(kind: str) -> None:
    # Staged and archived rows written before the compact format were np.save bytes.
    task = kind_task(kind)
    reports = kind_reports(task, 8, np.random.default_rng(9))
    mechanism_object = task.mechanism_object
    legacy = io.BytesIO()
    for array in columns(stack(mechanism_object, reports[:5])):
        np.save(legacy, array, allow_pickle=False)
    mixed = unpack(
        mechanism_object, [legacy.getvalue(), pack(stack(mechanism_object, reports[5:]))]
    )
    for got, expected in zip(
        columns(mixed), columns(stack(mechanism_object, reports)), strict=True
    ):
        assert got.dtype == expected.dtype and np.array_equal(got, expected)


def test_a_damaged_packed_batch_is_refused_not_misread() -> None:
    task = sketch_task("cms")
    blob = pack(stack(task.mechanism_object, payloads(task, WORDS[:4], np.random.default_rng(1))))
    with pytest.raises(ValueError):
        unpack(task.mechanism_object, [blob + b"\x00"])
    with pytest.raises(ValueError):
        unpack(task.mechanism_object, [blob[:-1]])


def columns(batch: Batch) -> tuple[np.ndarray, ...]:
    return (batch,) if isinstance(batch, np.ndarray) else astuple(batch)


@pytest.fixture(
    params=[(b, s) for b in ("sqlite", "postgresql") for s in (1, 1 << 30)],
    ids=lambda p: f"{p[0]}-{'fold-every-batch' if p[1] == 1 else 'fold-before-reading'}",
)
def store(stores: Stores, request: pytest.FixtureRequest) -> SqlStore:
    backend, staged_bytes = request.param
    return stores.open(backend, staged_bytes=staged_bytes)


@pytest.mark.parametrize("kind", MECHANISMS)
def test_stored_sums_give_the_shared_estimates(store: SqlStore, kind: str) -> None:
    task, candidates = kind_task(kind), CASES[kind].candidates
    store.create_task(StoredTask(task))
    reports = kind_reports(task, 60, np.random.default_rng(1))
    day = task.floor_time(1.7e9)
    first, second = envelopes(task, reports[:40], day), envelopes(task, reports[40:], day + DAY)
    assert store.add_reports(task, first, [0] * 40) == set()
    assert store.add_reports(task, second + first[:5], [0] * (len(second) + 5)) == {
        e.report_id for e in first[:5]
    }

    dense = dense_sums(task, reports)
    mechanism_object = task.mechanism_object
    expected = mechanism_object.estimate(dense, candidates)
    with store.read_sums(task, None, None) as sums:
        got = mechanism_object.estimate(sums, candidates)
        rows = mechanism_object.sums_shape[0]
        assert sums.total == len(reports)
        assert np.array_equal(sums.n, dense.n)  # exact integer sums, row by row
        assert np.array_equal(sums.table[0:rows], dense.table)
    assert got.n == len(reports)
    assert np.allclose(got.estimate, expected.estimate) and np.allclose(got.ci_low, expected.ci_low)
    with store.read_sums(task, day + DAY, None) as later:
        assert later.total == len(reports) - 40
    assert store.buckets(task) == [day, day + DAY]


def test_apple_size_sketch_uses_memory_of_a_block_not_of_the_table(store: SqlStore) -> None:
    task = sketch_task("cms", k=65_536, m=1024)  # a dense table would be 512 MiB
    store.create_task(StoredTask(task))
    reports = payloads(task, WORDS[:500], np.random.default_rng(2))
    tracemalloc.start()
    try:
        store.add_reports(task, envelopes(task, reports, 1.7e9), [0] * 500)
        with store.read_sums(task, None, None) as sums:
            result = task.mechanism_object.estimate(sums, ["w1", "w2"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.n == 500
    assert peak < 160 * 2**20


def test_expired_ids_are_collected(store: SqlStore) -> None:
    task = TaskConfig.create(task_id="r", mechanism="rr", epsilon=1.0)
    batch = envelopes(task, [1, 0, 1], 1.7e9)
    store.add_reports(task, batch, [100, 100, 300])
    assert store.collect_expired(200) == 2
    assert store.add_reports(task, batch, [400] * 3) == {batch[2].report_id}


def test_every_readiness_probe_writes(store: SqlStore) -> None:
    # A probe that rewrote the row's own bytes (twice in one second) committed nothing, so
    # /readyz answered 200 from a database that could not be written (an outside audit).
    def probe() -> int:
        store.check_writable()
        with store._read() as tx:
            ((at,),) = tx.execute("SELECT at FROM probe WHERE id = 1")
        return int(at)

    first, second, third = probe(), probe(), probe()
    assert first < second < third


def test_admission_window_edges() -> None:
    task = TaskConfig.create(task_id="r", mechanism="rr", epsilon=1.0, time_precision=3600)
    hour = task.floor_time(1.7e9)
    now = hour + 1800
    times = [hour, hour + 3600, hour - 3600 * 24, hour - 3600 * 25]
    batch = [envelopes(task, [1], t)[0] for t in times]
    admitted = admit(task, [*batch, batch[0]], now, acceptance_window=24 * 3600, clock_skew=600)
    assert [e.time for e in admitted.envelopes] == [hour, hour - 3600 * 24]
    assert admitted.expires == [hour + 25 * 3600, hour + 3600]  # bucket end + window
    assert [r.reason for r in admitted.rejected] == [
        "report_too_early",
        "report_expired",
        "report_replayed",
    ]
    skewed = admit(task, [batch[1]], hour + 3600 - 60, acceptance_window=0, clock_skew=600)
    assert len(skewed.envelopes) == 1  # a device clock a minute ahead is tolerated


@pytest.mark.parametrize("kind", MECHANISMS)
def test_a_read_adds_the_staged_reports_to_the_folded_ones_exactly(
    tmp_path: Path, kind: str
) -> None:
    task = kind_task(kind)
    reports = kind_reports(task, 700, np.random.default_rng(4))
    upload_bytes = len(pack(stack(task.mechanism_object, reports[:90])))
    path = str(tmp_path / "mixed.sqlite3")
    # Folds every second upload of 90 reports: the last upload (5 reports) stays staged.
    store = SqliteStore(path, staged_bytes=upload_bytes * 3 // 2, busy_timeout=0.5)
    store.inline_folds = 1  # each fold inside the upload crossing the threshold: no thread
    store.initialize()
    store.create_task(StoredTask(task))
    day = task.floor_time(1.7e9)
    cuts = [*range(0, len(reports) - 5, 90), len(reports) - 5, len(reports)]  # 5 stay staged
    for first, last in itertools.pairwise(cuts):
        chunk = envelopes(task, reports[first:last], day + DAY * min(2, first // 300))
        store.add_reports(task, chunk, [0] * len(chunk))
    dense = dense_sums(task, reports)
    writer = sqlite3.connect(path, isolation_level=None)
    try:
        staged, folded = (
            writer.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
            for table in ("staged", "sums")
        )
        assert staged and folded  # some reports folded, some still staged
        writer.execute("BEGIN IMMEDIATE")  # another process holds the write lock: a read
        with store.read_sums(task, None, None) as sums:  # must not wait for it
            rows = task.mechanism_object.sums_shape[0]
            assert sums.total == len(reports)
            assert np.array_equal(sums.n, dense.n)
            assert np.array_equal(sums.table[0:rows], dense.table)
        assert store.buckets(task) == [day, day + DAY, day + 2 * DAY]
    finally:
        writer.close()
