"""Integer accumulators: add == add_many == stack, merge == adding both, shapes enforced."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldp_telemetry.shared import (
    CountMeanSketch,
    GeneralizedRandomizedResponse,
    HadamardCountMeanSketch,
    HadamardReport,
    ParameterError,
    RandomizedResponse,
    SketchBatch,
    Sums,
)
from ldp_telemetry.shared.mechanisms.sketches.cms import ADD_CHUNK
from tests.shared.cases import Case, batch_reports, conformance_cases

CASES = conformance_cases()


def _batch(case: Case, mechanism: Any, size: int, seed: int) -> Any:
    values = [case.values[i % len(case.values)] for i in range(size)]
    return mechanism.privatize_many(values, np.random.default_rng(seed))


@pytest.mark.parametrize("case", CASES, ids=str)
def test_add_matches_add_many(case: Case) -> None:
    mechanism = case.build()
    batch = _batch(case, mechanism, 500, seed=1)
    one_by_one, at_once = mechanism.new_sums(), mechanism.new_sums()
    for report in batch_reports(mechanism, batch):
        one_by_one.add(report)
    at_once.add_many(batch)
    assert one_by_one == at_once and at_once.total == 500
    assert at_once.n.dtype == at_once.table.dtype == np.int64


@pytest.mark.parametrize("case", CASES, ids=str)
def test_merge_equals_adding_both_batches(case: Case) -> None:
    mechanism = case.build()
    first, second = _batch(case, mechanism, 300, seed=2), _batch(case, mechanism, 200, seed=3)
    left, right, both = mechanism.new_sums(), mechanism.new_sums(), mechanism.new_sums()
    left.add_many(first)
    right.add_many(second)
    both.add_many(first)
    both.add_many(second)
    merged = left.copy()
    merged.merge(right)
    assert merged == both and merged.total == 500
    assert left.total == 300, "copy must not share arrays with the original"
    loaded = mechanism.new_sums()
    loaded.load(both.n.copy(), both.table.copy())
    assert loaded == both


def test_stack_matches_the_batch_it_came_from() -> None:
    for sketch in (
        CountMeanSketch(epsilon=2.0, k=5, m=13, hash_seed=3),
        HadamardCountMeanSketch(epsilon=2.0, k=5, m=16, hash_seed=3),
    ):
        batch = sketch.privatize_many([f"v{i % 7}" for i in range(100)], np.random.default_rng(4))
        stacked = sketch.stack(batch_reports(sketch, batch))
        for name in stacked.__slots__:
            assert np.array_equal(getattr(stacked, name), getattr(batch, name))


def _reference_cms_table(k: int, m: int, batch: SketchBatch) -> np.ndarray:
    table = np.zeros((k, m), dtype=np.int64)
    np.add.at(table, batch.rows, np.unpackbits(batch.bits, axis=1, count=m))
    return table


def test_cms_add_many_across_chunk_boundaries() -> None:
    cms = CountMeanSketch(epsilon=2.0, k=7, m=10, hash_seed=5)
    rng = np.random.default_rng(6)
    size = 2 * ADD_CHUNK + 123
    batch = SketchBatch(
        rng.integers(0, 7, size),
        np.packbits(rng.integers(0, 2, (size, 10), dtype=np.uint8), axis=1),
    )
    sums = cms.new_sums()
    sums.add_many(batch)
    assert np.array_equal(sums.table, _reference_cms_table(7, 10, batch))
    assert np.array_equal(sums.n, np.bincount(batch.rows, minlength=7))


@settings(max_examples=60, deadline=None)
@given(k=st.integers(1, 6), m=st.integers(2, 20), data=st.data())
def test_cms_add_many_matches_a_reference(k: int, m: int, data: st.DataObject) -> None:
    cms = CountMeanSketch(epsilon=2.0, k=k, m=m, hash_seed=1)
    size = data.draw(st.integers(0, 40))
    rows = np.array(
        data.draw(st.lists(st.integers(0, k - 1), min_size=size, max_size=size)), dtype=np.int64
    )
    bits = np.array(
        data.draw(
            st.lists(
                st.lists(st.integers(0, 1), min_size=m, max_size=m), min_size=size, max_size=size
            )
        ),
        dtype=np.uint8,
    )
    batch = SketchBatch(rows, np.packbits(bits.reshape(size, m), axis=1))
    sums = cms.new_sums()
    sums.add_many(batch)
    assert np.array_equal(sums.table, _reference_cms_table(k, m, batch))
    assert sums.total == size


@settings(max_examples=60, deadline=None)
@given(k=st.integers(1, 6), log_m=st.integers(1, 5), data=st.data())
def test_hcms_add_many_matches_a_reference(k: int, log_m: int, data: st.DataObject) -> None:
    m = 1 << log_m
    hcms = HadamardCountMeanSketch(epsilon=2.0, k=k, m=m, hash_seed=1)
    reports = data.draw(
        st.lists(
            st.tuples(st.integers(0, k - 1), st.integers(0, m - 1), st.integers(0, 1)), max_size=40
        )
    )
    expected = np.zeros((k, m), dtype=np.int64)
    for row, col, bit in reports:
        expected[row, col] += 1 if bit else -1
    sums = hcms.new_sums()
    sums.add_many(hcms.stack([HadamardReport(*r) for r in reports]))
    assert np.array_equal(sums.table, expected) and sums.total == len(reports)


def test_merging_mismatched_sums_raises() -> None:
    cms = CountMeanSketch(epsilon=2.0, k=4, m=8, hash_seed=1).new_sums()
    with pytest.raises(ParameterError, match="different task shapes"):
        cms.merge(CountMeanSketch(epsilon=2.0, k=5, m=8, hash_seed=1).new_sums())
    with pytest.raises(ParameterError, match="different task shapes"):
        cms.merge(HadamardCountMeanSketch(epsilon=2.0, k=4, m=8, hash_seed=1).new_sums())
    plain = Sums(4, 8)
    with pytest.raises(ParameterError):
        cms.merge(plain)
    with pytest.raises(ParameterError, match="do not match"):
        cms.load(np.zeros(5, dtype=np.int64), np.zeros((5, 8), dtype=np.int64))
    assert cms.total == 0


def test_sums_are_unhashable_and_compare_by_content() -> None:
    sums = CountMeanSketch(epsilon=2.0, k=2, m=4, hash_seed=1).new_sums()
    with pytest.raises(TypeError):
        hash(sums)
    assert sums != Sums(2, 4) and sums != "sums"


@pytest.mark.parametrize(
    ("mechanism", "foreign", "candidates"),
    [
        (
            RandomizedResponse(epsilon=1.0),
            GeneralizedRandomizedResponse(epsilon=1.0, domain=["a", "b"]),
            (True,),
        ),
        (
            GeneralizedRandomizedResponse(epsilon=1.0, domain=["a", "b", "c"]),
            GeneralizedRandomizedResponse(epsilon=1.0, domain=["a", "b"]),
            ["a"],
        ),
        (
            HadamardCountMeanSketch(epsilon=1.0, k=4, m=16, hash_seed=1),
            HadamardCountMeanSketch(epsilon=1.0, k=8, m=16, hash_seed=1),
            ["x"],
        ),
        (
            HadamardCountMeanSketch(epsilon=1.0, k=8, m=16, hash_seed=1),
            HadamardCountMeanSketch(epsilon=1.0, k=4, m=16, hash_seed=1),
            ["x"],
        ),
        (
            CountMeanSketch(epsilon=1.0, k=4, m=16, hash_seed=1),
            CountMeanSketch(epsilon=1.0, k=8, m=16, hash_seed=1),
            ["x"],
        ),
        (
            CountMeanSketch(epsilon=1.0, k=4, m=16, hash_seed=1),
            CountMeanSketch(epsilon=1.0, k=4, m=15, hash_seed=1),
            ["x"],
        ),
    ],
    ids=[
        "rr-with-grr-sums",
        "grr-d3-with-d2",
        "hcms-k4-with-k8",
        "hcms-k8-with-k4",
        "cms-k4-with-k8",
        "cms-m16-with-m15",
    ],
)
def test_estimating_another_tasks_sums_raises(
    mechanism: Any, foreign: Any, candidates: Any
) -> None:
    # Regression: a smaller task's estimator silently read the first rows of a bigger
    # task's sums (and rr read grr sums) instead of refusing.
    with pytest.raises(ParameterError, match="belong to another task"):
        mechanism.estimate(foreign.new_sums(), candidates)


def test_cms_add_many_with_many_rows_and_crowded_rows() -> None:
    """More rows than one counting block, and rows past a uint8 counter's 255 reports."""
    cms = CountMeanSketch(epsilon=2.0, k=1000, m=21, hash_seed=5)
    rng = np.random.default_rng(8)
    rows = np.concatenate(
        [
            rng.integers(0, 1000, 5000),
            np.full(700, 17),
            np.full(300, 999),
            np.full(256, 0),
            np.full(255, 1),
        ]
    )
    rng.shuffle(rows)
    batch = SketchBatch(
        rows.astype(np.int64),
        np.packbits(rng.integers(0, 2, (len(rows), 21), dtype=np.uint8), axis=1),
    )
    sums = cms.new_sums()
    sums.add_many(batch)
    assert np.array_equal(sums.table, _reference_cms_table(1000, 21, batch))
    assert np.array_equal(sums.n, np.bincount(rows, minlength=1000))
    all_ones = SketchBatch(np.full(600, 3, dtype=np.int64), np.full((600, 3), 255, np.uint8))
    sums.add_many(all_ones)  # padding bits set must be ignored, counts past 255 kept
    assert sums.table[3].tolist() == (_reference_cms_table(1000, 21, batch)[3] + 600).tolist()


def test_add_many_refuses_rows_outside_the_sketch_without_changing_it() -> None:
    cms = CountMeanSketch(epsilon=2.0, k=4, m=8, hash_seed=5)
    sums = cms.new_sums()
    bad = SketchBatch(np.array([0, 4], dtype=np.int64), np.zeros((2, 1), np.uint8))
    with pytest.raises((IndexError, ValueError)):
        sums.add_many(bad)
    assert sums.total == 0 and not sums.table.any()
    hcms = HadamardCountMeanSketch(epsilon=2.0, k=4, m=8, hash_seed=5)
    hsums = hcms.new_sums()
    with pytest.raises((IndexError, ValueError)):
        hsums.add_many(hcms.stack([HadamardReport(0, 0, 1), HadamardReport(4, 0, 1)]))
    assert hsums.total == 0 and not hsums.table.any()
