"""Count-mean sketch specifics: packed reports, Apple's estimator, chunked gathering."""

from __future__ import annotations

import math
import os
import random

import numpy as np
import pytest

from ldp_telemetry.shared import CountMeanSketch, SketchReport
from ldp_telemetry.shared.mechanisms.sketches import base as sketch_module
from tests.shared.cases import FakeEntropy


def apple_cms_estimate(
    cms: CountMeanSketch, reports: list[SketchReport], candidates: list[str]
) -> np.ndarray:
    """Return f̂ by the paper's own steps, one report at a time, in floats."""
    k, m, n = cms.k, cms.m, len(reports)
    c_eps = (math.exp(cms.effective_epsilon / 2) + 1) / (math.exp(cms.effective_epsilon / 2) - 1)
    sketch = np.zeros((k, m))
    for report in reports:
        signs = 2.0 * np.unpackbits(np.frombuffer(report.bits, np.uint8), count=m) - 1.0
        sketch[report.row] += k * (c_eps / 2 * signs + 0.5)
    out = []
    for value in candidates:
        key = cms.key(value)
        total = sum(sketch[j, cms.hashes.bucket(key, j)] for j in range(k))
        out.append((m / (m - 1)) * (total / k - n / m))
    return np.array(out)


@pytest.mark.parametrize(("k", "m"), [(1, 2), (4, 13), (16, 64)])
def test_estimate_matches_apples_estimator(k: int, m: int) -> None:
    cms = CountMeanSketch(epsilon=3.0, k=k, m=m, hash_seed=17)
    values = [f"item-{i % 9}" for i in range(400)]
    batch = cms.privatize_many(values, np.random.default_rng(k))
    sums = cms.new_sums()
    sums.add_many(batch)
    candidates = [f"item-{i}" for i in range(12)]
    reports = [batch.report(i) for i in range(len(batch))]
    expected = apple_cms_estimate(cms, reports, candidates)
    assert np.allclose(cms.estimate(sums, candidates).estimate, expected, rtol=1e-9, atol=1e-7)


def test_c_eps_is_derived_from_the_implemented_flip_probability() -> None:
    cms = CountMeanSketch(epsilon=4.0, k=4, m=8, hash_seed=1)
    half = math.exp(cms.effective_epsilon / 2)
    assert cms.c_eps == pytest.approx((half + 1) / (half - 1), rel=1e-12)
    assert cms.flip == cms.flip_threshold / 2**32 >= 1 / (1 + math.exp(2.0))


@pytest.mark.parametrize("m", [2, 7, 8, 13, 1000])
def test_reports_are_packed_with_zero_padding(m: int) -> None:
    cms = CountMeanSketch(epsilon=0.5, k=3, m=m, hash_seed=2)  # many flips: padding at risk
    rng = np.random.default_rng(m)
    batch = cms.privatize_many(["a"] * 300, rng)
    singles = [cms.privatize("a", rng) for _ in range(50)]
    assert batch.bits.shape == (300, (m + 7) // 8) and batch.bits.dtype == np.uint8
    assert all(len(r.bits) == (m + 7) // 8 and 0 <= r.row < 3 for r in singles)
    if m % 8:
        pad = (1 << (8 - m % 8)) - 1
        assert not np.any(batch.bits[:, -1] & pad)
        assert not any(r.bits[-1] & pad for r in singles)


def test_gather_in_many_small_chunks_equals_one_block(monkeypatch: pytest.MonkeyPatch) -> None:
    cms = CountMeanSketch(epsilon=2.0, k=37, m=11, hash_seed=4)
    sums = cms.new_sums()
    sums.add_many(cms.privatize_many([f"v{i % 23}" for i in range(3000)], np.random.default_rng(9)))
    candidates = [f"v{i}" for i in range(50)]
    whole = cms.estimate(sums, candidates).estimate
    keys = cms.keys(candidates)
    buckets = cms.hashes.bucket_matrix(keys, slice(0, cms.k))
    gathered = sums.table[np.arange(cms.k), buckets].sum(axis=1)
    assert np.array_equal(cms.gather(keys, lambda rows: sums.table[rows]), gathered)
    monkeypatch.setattr(sketch_module, "GATHER_ELEMENTS", 7, raising=False)
    assert np.array_equal(cms.gather(keys, lambda rows: sums.table[rows]), gathered)
    assert np.array_equal(cms.estimate(sums, candidates).estimate, whole)


def _flip_count(cms: CountMeanSketch, value: str, reports: list[SketchReport]) -> int:
    key, flips = cms.key(value), 0
    for report in reports:
        bits = np.unpackbits(np.frombuffer(report.bits, np.uint8), count=cms.m)
        bits[cms.hashes.bucket(key, report.row)] ^= 1
        flips += int(bits.sum())
    return flips


@pytest.mark.parametrize("epsilon", [0.3, 2.0, 11.08, 14.0, 19.5])
def test_default_rng_flip_rate_is_exact(epsilon: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """rng=None flips at T/2^32 also when T's leading bytes are small (ties decide)."""
    fake = FakeEntropy(f"flips-{epsilon}".encode(), size=1 << 24)
    monkeypatch.setattr(os, "urandom", fake)
    monkeypatch.setattr(random, "_urandom", fake)
    cms = CountMeanSketch(epsilon=epsilon, k=3, m=512, hash_seed=8)
    batch = cms.privatize_many(["v"] * 4000)
    reports = [batch.report(i) for i in range(len(batch))]
    reports += [cms.privatize("v") for _ in range(1000)]
    trials = len(reports) * cms.m
    expected = trials * cms.flip
    sd = math.sqrt(trials * cms.flip * (1 - cms.flip))
    assert abs(_flip_count(cms, "v", reports) - expected) < 5 * sd + 1
