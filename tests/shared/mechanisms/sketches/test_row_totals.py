"""The sums checks take the table total the estimate read: one pass, the same answers."""

from __future__ import annotations

import copy
import pickle
import string
from typing import Any

import numpy as np

from ldp_telemetry.shared.mechanisms.hh.mechanism import HeavyHitters
from ldp_telemetry.shared.mechanisms.sketches.cms import CountMeanSketch


class CountingSums:
    """Sums served block by block, as a store streams them, counting the rows read."""

    def __init__(self, sums: Any) -> None:
        self.inner, self.rows_read = sums, 0
        self.total, self.n = sums.total, sums.n
        self.table = self

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.inner.table.shape)

    def __getitem__(self, rows: slice) -> np.ndarray:
        block = self.inner.table[rows]
        self.rows_read += len(block)
        return block


def _fresh(mechanism: Any) -> Any:
    """Return a twin of the mechanism that has recorded nothing."""
    if isinstance(mechanism, HeavyHitters):
        return HeavyHitters(
            epsilon=mechanism.epsilon,
            k=mechanism.k,
            m=mechanism.m,
            hash_seed=mechanism.hash_seed,
            alphabet=mechanism.alphabet,
            max_length=mechanism.max_length,
        )
    return CountMeanSketch(
        epsilon=mechanism.epsilon, k=mechanism.k, m=mechanism.m, hash_seed=mechanism.hash_seed
    )


def test_cms_checks_after_an_estimate_read_no_row_and_answer_the_same() -> None:
    rng = np.random.default_rng(1)
    cms = CountMeanSketch(epsilon=2.0, k=64, m=128, hash_seed=4)
    inner = cms.new_sums()
    inner.add_many(cms.privatize_many(["a", "b", "c"] * 2000, rng))
    sums = CountingSums(inner)
    cms.estimate(sums, ["a", "zz"])
    assert sums.rows_read == cms.k
    checks = cms.check_sums(sums)
    assert sums.rows_read == cms.k  # the weight test took the estimate's total
    assert checks == _fresh(cms).check_sums(inner)
    assert {c.name for c in checks} == {"row_spread", "bit_weight"}


def test_sums_that_gained_reports_since_the_estimate_are_read_again() -> None:
    rng = np.random.default_rng(2)
    cms = CountMeanSketch(epsilon=2.0, k=32, m=64, hash_seed=4)
    sums = cms.new_sums()
    sums.add_many(cms.privatize_many(["a"] * 500, rng))
    cms.estimate(sums, ["a"])
    sums.add_many(cms.privatize_many(["b"] * 3000, rng))  # 3,000 more 1-heavy reports
    assert cms.check_sums(sums) == _fresh(cms).check_sums(sums)


def test_hh_checks_read_only_the_levels_the_estimate_did_not() -> None:
    rng = np.random.default_rng(3)
    hh = HeavyHitters(
        epsilon=4.0, k=32, m=64, hash_seed=8, alphabet=string.ascii_lowercase, max_length=6
    )
    inner = hh.new_sums()
    inner.add_many(hh.privatize_many(["hello", "abc", "xy"] * 1000, rng))
    sums = CountingSums(inner)
    hh.estimate(sums, ["abcdef"])  # whole only at the last level: one level read
    assert sums.rows_read == hh.k
    checks = hh.check_sums(sums)
    assert sums.rows_read == hh.level_count * hh.k  # the other levels, once each
    assert checks == _fresh(hh).check_sums(inner)
    hh.check_sums(sums)
    assert sums.rows_read == hh.level_count * hh.k  # now every level is known


def test_a_pickled_mechanism_starts_with_nothing_recorded() -> None:
    cms = CountMeanSketch(epsilon=2.0, k=16, m=32, hash_seed=4)
    sums = cms.new_sums()
    sums.add_many(cms.privatize_many(["a"] * 100, np.random.default_rng(4)))
    cms.estimate(sums, ["a"])
    twin = pickle.loads(pickle.dumps(cms))
    assert twin.check_sums(sums) == cms.check_sums(sums) == copy.deepcopy(cms).check_sums(sums)
