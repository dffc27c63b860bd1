"""The exact sum samplers against the real path (privatize_many + add_many) and the exact
per-cell and per-estimate mean and variance, at small n with a fixed hash family."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from ldp_telemetry.shared import (
    CountMeanSketch,
    GeneralizedRandomizedResponse,
    HadamardCountMeanSketch,
    RandomizedResponse,
    Sums,
)
from simulations.common import sampler
from simulations.common.population import Population

REPS = 500
POP = Population(("a", "b", "c", "d", "e", "f"), np.array([120, 60, 30, 10, 5, 0]))


def _repeat(draw: Callable[[np.random.Generator], Sums], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.stack([draw(rng).table.astype(float) for _ in range(REPS)])


def _real(mech: Any, values: Any) -> Callable[[np.random.Generator], Sums]:
    """Return the real route: privatize every value, then add the batch."""

    def draw(rng: np.random.Generator) -> Sums:
        sums = mech.new_sums()
        sums.add_many(mech.privatize_many(values, rng))
        return sums

    return draw


def _assert_moments(
    samples: np.ndarray, mean: np.ndarray, var: np.ndarray, pooled: bool = True
) -> None:
    """Each cell's sample mean within 4.5 SE of ``mean``; its variance within ±35%.

    With ``pooled`` the variance ratio averaged over the (nearly independent) cells must
    also be within 7% of 1.
    """
    z = (samples.mean(axis=0) - mean) / np.sqrt(var / len(samples))
    assert np.max(np.abs(z)) < 4.5
    ratio = samples.var(axis=0, ddof=1) / var
    assert ratio.min() > 0.65 and ratio.max() < 1.35
    if pooled:
        assert abs(ratio.mean() - 1.0) < 0.07


def _collision_rates(mech: CountMeanSketch | HadamardCountMeanSketch) -> np.ndarray:
    """Return r[d', d]: the fraction of rows where h_j(d') = h_j(d)."""
    buckets = mech.hashes.bucket_matrix(mech.keys(list(POP.values)), slice(0, mech.k))
    return (buckets[:, None, :] == buckets[None, :, :]).mean(axis=2)


def _sketch_cell_moments(mech: CountMeanSketch) -> tuple[np.ndarray, np.ndarray]:
    buckets = mech.hashes.bucket_matrix(mech.keys(list(POP.values)), slice(0, mech.k))
    hit = buckets[:, :, None] == np.arange(mech.m)[None, None, :]  # (values, k, m)
    prob = (mech.flip + (1 - 2 * mech.flip) * hit) / mech.k
    return (
        np.einsum("v,vjc->jc", POP.counts, prob),
        np.einsum("v,vjc->jc", POP.counts, prob * (1 - prob)),
    )


def _hadamard_cell_moments(mech: HadamardCountMeanSketch) -> tuple[np.ndarray, np.ndarray]:
    buckets = mech.hashes.bucket_matrix(mech.keys(list(POP.values)), slice(0, mech.k))
    cols = np.arange(mech.m)
    parity = np.bitwise_count(buckets[:, :, None] & cols[None, None, :]).astype(int) & 1
    signs = 1 - 2 * parity
    cell = 1.0 / (mech.k * mech.m)
    mean_one = cell * (1 - 2 * mech.flip) * signs  # (values, k, m)
    return (
        np.einsum("v,vjc->jc", POP.counts, mean_one),
        np.einsum("v,vjc->jc", POP.counts, cell - mean_one**2),
    )


def _estimate_moments(
    mech: CountMeanSketch | HadamardCountMeanSketch, hadamard: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Exact mean and variance of each value's estimate for this fixed hash family."""
    r, f, n, scale = _collision_rates(mech), POP.counts.astype(float), POP.n, mech.m / (mech.m - 1)
    mean = f + scale * ((f[:, None] * (r - 1 / mech.m)).sum(axis=0) - f * (1 - 1 / mech.m))
    if hadamard:
        var = scale**2 * (n * mech.c_eps**2 - (f[:, None] * r**2).sum(axis=0))
    else:
        var = scale**2 * (n * (mech.c_eps**2 - 1) / 4 + (f[:, None] * r * (1 - r)).sum(axis=0))
    return mean, var


def _sketch_routes(
    mechanism: str,
) -> tuple[
    CountMeanSketch | HadamardCountMeanSketch,
    Callable[[np.random.Generator], Sums],
    tuple[np.ndarray, np.ndarray],
]:
    """Return the mechanism, its sampler route and its exact per-cell moments."""
    if mechanism == "hcms":
        hcms = HadamardCountMeanSketch(epsilon=2.0, k=4, m=16, hash_seed=7)
        return (
            hcms,
            lambda rng: sampler.sample_hcms_sums(hcms, POP.values, POP.counts, rng),
            _hadamard_cell_moments(hcms),
        )
    cms = CountMeanSketch(epsilon=2.0, k=4, m=16, hash_seed=7)
    return (
        cms,
        lambda rng: sampler.sample_cms_sums(cms, POP.values, POP.counts, rng),
        _sketch_cell_moments(cms),
    )


@pytest.mark.parametrize("mechanism", ["cms", "hcms"])
def test_sketch_sampler_matches_real_reports(mechanism: str) -> None:
    mech, sample, (cell_mean, cell_var) = _sketch_routes(mechanism)
    values = [v for v, c in zip(POP.values, POP.counts, strict=True) for _ in range(c)]
    est_mean, est_var = _estimate_moments(mech, hadamard=mechanism == "hcms")
    for seed, draw in enumerate([sample, _real(mech, values)]):
        rng = np.random.default_rng(seed)
        sums = [draw(rng) for _ in range(REPS)]
        assert all(s.total == POP.n for s in sums)
        _assert_moments(np.stack([s.table for s in sums]).astype(float), cell_mean, cell_var)
        estimates = np.stack([mech.estimate(s, list(POP.values)).estimate for s in sums])
        # The six estimates share cells, so their variance ratios are not pooled.
        _assert_moments(estimates, est_mean, est_var, pooled=False)


def test_rr_sampler_matches_real_reports() -> None:
    mech = RandomizedResponse(alpha=0.5, beta=0.5)
    yes, no = 300, 700
    mean = yes * mech.p11 + no * mech.p10
    var = yes * mech.p11 * (1 - mech.p11) + no * mech.p10 * (1 - mech.p10)
    truth = np.array([True] * yes + [False] * no)
    for seed, draw in enumerate(
        [lambda rng: sampler.sample_rr_sums(mech, yes, no, rng), _real(mech, truth)]
    ):
        _assert_moments(
            _repeat(draw, seed), np.array([[mean]]), np.array([[var]]), pooled=False
        )  # one cell: nothing to pool


def test_grr_sampler_matches_real_reports() -> None:
    mech = GeneralizedRandomizedResponse(epsilon=1.0, domain=POP.values)
    probs = np.full((mech.d, mech.d), mech.q)
    np.fill_diagonal(probs, mech.p)  # probs[truth, report]
    mean = POP.counts @ probs
    var = POP.counts @ (probs * (1 - probs))
    values = [v for v, c in zip(POP.values, POP.counts, strict=True) for _ in range(c)]
    for seed, draw in enumerate(
        [lambda rng: sampler.sample_grr_sums(mech, POP.counts, rng), _real(mech, values)]
    ):
        _assert_moments(
            _repeat(draw, seed), mean[None, :], var[None, :], pooled=False
        )  # six dependent cells: too few to pool


@pytest.mark.parametrize("chunk", [7, sampler.CHUNK])
def test_split_uniformly_keeps_every_count(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    monkeypatch.setattr(sampler, "CHUNK", chunk)
    counts = np.array([0, 1, 5, 40, 3, 1000])
    owner, slot, amount = sampler.split_uniformly(counts, 8, np.random.default_rng(1))
    assert np.array_equal(np.bincount(owner, weights=amount, minlength=6), counts)
    assert slot.min() >= 0 and slot.max() < 8 and amount.min() > 0
    big = np.bincount(slot[owner == 5], weights=amount[owner == 5], minlength=8)
    assert np.all(np.abs(big - 125) < 4.5 * np.sqrt(1000 / 8 * 7 / 8))


def test_large_n_is_cheap() -> None:
    mech = CountMeanSketch(epsilon=4.0, k=64, m=1024, hash_seed=3)
    counts = np.array([6_000_000, 3_000_000, 1_000_000])
    sums = sampler.sample_cms_sums(mech, ("x", "y", "z"), counts, np.random.default_rng(0))
    assert sums.total == 10_000_000
    estimate = mech.estimate(sums, ["x", "nobody"]).estimate
    assert abs(estimate[0] - 6_000_000) < 5 * 1350 and abs(estimate[1]) < 5 * 1350 + 3e4
