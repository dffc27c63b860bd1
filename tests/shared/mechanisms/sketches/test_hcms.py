"""Hadamard count-mean sketch specifics: the transform, parity and Apple's estimator."""

from __future__ import annotations

import math
import os
import random

import numpy as np
import pytest
from scipy.linalg import hadamard
from scipy.stats import chisquare

from ldp_telemetry.shared import HadamardCountMeanSketch, HadamardReport
from ldp_telemetry.shared.mechanisms.sketches import base as sketch_module
from ldp_telemetry.shared.mechanisms.sketches.hcms import _parity, walsh_hadamard
from tests.shared.cases import FakeEntropy


@pytest.mark.parametrize("m", [2, 4, 8, 64, 256])
def test_walsh_hadamard_equals_the_dense_sylvester_matrix(m: int) -> None:
    block = np.random.default_rng(m).integers(-50, 50, size=(5, m))
    assert np.array_equal(walsh_hadamard(block), block @ hadamard(m))
    assert np.array_equal(walsh_hadamard(walsh_hadamard(block)), m * block)  # H·H = m·I


def test_parity_matches_popcount() -> None:
    x = np.random.default_rng(1).integers(0, 2**32, size=2000)
    assert _parity(x).tolist() == [bin(int(v)).count("1") % 2 for v in x]


def apple_hcms_estimate(
    hcms: HadamardCountMeanSketch, reports: list[HadamardReport], candidates: list[str]
) -> np.ndarray:
    """Return f̂ by the paper's steps with the dense Hadamard matrix, in floats."""
    k, m, n = hcms.k, hcms.m, len(reports)
    eps = math.exp(hcms.effective_epsilon)
    c_eps = (eps + 1) / (eps - 1)
    sketch = np.zeros((k, m))
    for report in reports:
        sketch[report.row, report.col] += k * c_eps * (2 * report.bit - 1)
    transformed = sketch @ hadamard(m).T
    out = []
    for value in candidates:
        key = hcms.key(value)
        total = sum(transformed[j, hcms.hashes.bucket(key, j)] for j in range(k))
        out.append((m / (m - 1)) * (total / k - n / m))
    return np.array(out)


@pytest.mark.parametrize(("k", "m"), [(1, 2), (4, 16), (16, 64)])
def test_estimate_matches_apples_estimator(k: int, m: int) -> None:
    hcms = HadamardCountMeanSketch(epsilon=3.0, k=k, m=m, hash_seed=17)
    batch = hcms.privatize_many([f"item-{i % 9}" for i in range(400)], np.random.default_rng(k))
    sums = hcms.new_sums()
    sums.add_many(batch)
    candidates = [f"item-{i}" for i in range(12)]
    expected = apple_hcms_estimate(hcms, [batch.report(i) for i in range(len(batch))], candidates)
    assert np.allclose(hcms.estimate(sums, candidates).estimate, expected, rtol=1e-9, atol=1e-7)


def test_report_bit_is_the_hadamard_entry_when_not_flipped() -> None:
    hcms = HadamardCountMeanSketch(epsilon=20.0, k=3, m=8, hash_seed=5)  # flips ~ 2e-9
    rng = np.random.default_rng(3)
    batch = hcms.privatize_many(["x"] * 200, rng)
    key = hcms.key("x")
    for report in [batch.report(i) for i in range(200)] + [hcms.privatize("x", rng)]:
        bucket = hcms.hashes.bucket(key, report.row)
        assert report.bit == int(hadamard(8)[report.col, bucket] == 1)


def test_estimate_in_many_small_chunks_is_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    hcms = HadamardCountMeanSketch(epsilon=2.0, k=37, m=16, hash_seed=4)
    sums = hcms.new_sums()
    sums.add_many(
        hcms.privatize_many([f"v{i % 23}" for i in range(3000)], np.random.default_rng(9))
    )
    candidates = [f"v{i}" for i in range(50)]
    whole = hcms.estimate(sums, candidates).estimate
    monkeypatch.setattr(sketch_module, "GATHER_ELEMENTS", 7, raising=False)
    assert np.array_equal(hcms.estimate(sums, candidates).estimate, whole)
    expected = apple_hcms_estimate(hcms, _reports_of(sums), candidates)
    assert np.allclose(whole, expected, rtol=1e-9, atol=1e-7)


def _reports_of(sums: object) -> list[HadamardReport]:
    """Return reports whose signed sums equal ``sums`` (the estimator is linear in them)."""
    table = sums.table
    counts = sums.n
    reports = []
    for row in range(table.shape[0]):
        for col in range(table.shape[1]):
            value = int(table[row, col])
            reports += [HadamardReport(row, col, int(value > 0))] * abs(value)
        # pad with +1/−1 pairs, which cancel, so each row keeps its report count
        pairs = (int(counts[row]) - sum(abs(int(v)) for v in table[row])) // 2
        reports += [HadamardReport(row, 0, 1), HadamardReport(row, 0, 0)] * pairs
    return reports


def test_default_rng_privatize_reads_the_os_once_per_report(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Row, column and flip word come from one os.urandom read of 12 bytes."""
    hcms = HadamardCountMeanSketch(epsilon=2.0, k=256, m=1024, hash_seed=1)
    fake = FakeEntropy(b"hcms-reads")
    reads: list[int] = []
    monkeypatch.setattr(os, "urandom", lambda count: reads.append(count) or fake(count))
    for _ in range(100):
        report = hcms.privatize("v")
        assert 0 <= report.row < 256 and 0 <= report.col < 1024 and report.bit in (0, 1)
    assert reads == [12] * 100


@pytest.mark.parametrize("epsilon", [0.3, 2.0, 11.08])
def test_default_rng_single_reports_flip_at_t_over_2_32(
    epsilon: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeEntropy(f"hcms-flips-{epsilon}".encode())
    monkeypatch.setattr(os, "urandom", fake)
    monkeypatch.setattr(random, "_urandom", fake)
    hcms = HadamardCountMeanSketch(epsilon=epsilon, k=3, m=8, hash_seed=2)
    key, flips, trials = hcms.key("v"), 0, 40_000
    rows, cols = np.zeros(3, int), np.zeros(8, int)
    for _ in range(trials):
        report = hcms.privatize("v")
        plus = (report.col & hcms.hashes.bucket(key, report.row)).bit_count() % 2 == 0
        flips += plus != (report.bit == 1)
        rows[report.row] += 1
        cols[report.col] += 1
    sd = math.sqrt(trials * hcms.flip * (1 - hcms.flip))
    assert abs(flips - trials * hcms.flip) < 5 * sd + 1
    assert chisquare(rows).pvalue > 1e-4 and chisquare(cols).pvalue > 1e-4
