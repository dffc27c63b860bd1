"""The found items' collisions taken out of a discovery's counts (hh_collisions)."""

from __future__ import annotations

import string

import numpy as np

from ldp_telemetry.shared.mechanisms.hh.collisions import disentangle, shared_rows
from ldp_telemetry.shared.mechanisms.hh.mechanism import HeavyHitters
from ldp_telemetry.shared.mechanisms.sketches.cms import CountMeanSketch


def test_shared_rows_counts_every_pair_sharing_a_bucket_as_brute_force_does() -> None:
    sketch = CountMeanSketch(epsilon=2.0, k=12, m=8, hash_seed=5)
    keys = sketch.keys([f"w{i}" for i in range(40)])
    pairs = shared_rows(sketch, keys)
    buckets = sketch.hashes.bucket_matrix(keys, slice(0, sketch.k))
    brute = (buckets[:, None, :] == buckets[None, :, :]).sum(axis=2)
    np.fill_diagonal(brute, 0)
    found = np.zeros_like(brute)
    found[pairs.first, pairs.second] = pairs.rows
    assert np.array_equal(found, brute)
    assert pairs.rows.min() >= 1
    among = np.array([3, 17, 30])  # only these as the second of a pair
    some = shared_rows(sketch, keys, among)
    assert set(some.second.tolist()) <= set(among.tolist())
    assert np.array_equal(brute[some.first, some.second], some.rows)
    assert len(some.rows) == np.count_nonzero(brute[:, among])


def test_a_string_high_only_through_a_heavy_ones_rows_is_brought_back_to_zero() -> None:
    rng = np.random.default_rng(24)
    sketch = CountMeanSketch(epsilon=2.0, k=32, m=64, hash_seed=9)
    names = ["heavy", *(f"x{i}" for i in range(3000))]
    keys = sketch.keys(names)
    buckets = sketch.hashes.bucket_matrix(keys, slice(0, sketch.k))
    shared = (buckets[1:] == buckets[0]).sum(axis=1)
    twin = 1 + int(np.argmax(shared))  # the candidate sharing most rows with "heavy"
    assert shared[twin - 1] >= 4
    n = 40_000
    sums = sketch.new_sums()
    sums.add_many(sketch.privatize_many(["heavy"] * n, rng))
    chosen = [names[0], names[twin]]
    raw = sketch.estimate(sums, chosen)
    counts, variance = disentangle(sketch, raw.estimate, n, sketch.keys(chosen), found_z=4.0)
    noise = np.sqrt(sketch.noise_variance(n, np.clip(raw.estimate, 0, n)))
    assert raw.estimate[1] > 6 * noise[1]  # what the search saw: a "frequent" string
    assert abs(counts[1]) < 4 * np.sqrt(variance[1])  # what it now answers: nothing
    assert abs(counts[0] - n) < 4 * np.sqrt(variance[0])
    assert np.all(variance >= sketch.noise_variance(n, np.clip(counts, 0, n)))


def test_only_found_items_are_taken_out() -> None:
    rng = np.random.default_rng(7)
    sketch = CountMeanSketch(epsilon=2.0, k=32, m=64, hash_seed=3)
    names = [f"v{i}" for i in range(20)]
    sums = sketch.new_sums()
    sums.add_many(sketch.privatize_many(names * 50, rng))  # 50 each: none stands out
    raw = sketch.estimate(sums, names).estimate
    counts, variance = disentangle(sketch, raw, sums.total, sketch.keys(names), found_z=1e6)
    assert np.array_equal(counts, raw)
    assert np.allclose(variance, sketch.noise_variance(sums.total, np.clip(raw, 0, sums.total)))


def test_a_discovery_over_a_point_mass_flags_only_the_point_mass_reliable() -> None:
    # k = 16 rows: among ~45,000 last-level candidates some share 4 or 5 of them with
    # "gold"; before its collisions were taken out, seeds 0 and 3 flagged one reliable.
    for seed in (0, 3):
        rng = np.random.default_rng(seed)
        hh = HeavyHitters(
            epsilon=4.0, k=16, m=64, hash_seed=seed, alphabet=string.ascii_lowercase, max_length=4
        )
        sums = hh.new_sums()
        sums.add_many(hh.privatize_many(["gold"] * 20_000, rng))
        rows = hh.discover(sums, top=5).rows()
        assert [r["value"] for r in rows if r["reliable"]] == ["gold"]
        assert rows[0]["ci_low"] < 20_000 < rows[0]["ci_high"]
