"""The task hash family, pinned bit for bit (PROTOCOL.md §3.1): client and server must agree.

Golden vectors fix mmh3 keys and row buckets; a pure-Python reference of SplitMix64 and
multiply-add-shift checks the vectorized numpy code; hypothesis checks that the three
ways of computing a bucket agree.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldp_telemetry.shared.errors import ParameterError, ValueOutOfDomain
from ldp_telemetry.shared.hashing import MAX_SEED, RowHashes, splitmix64, value_key, value_keys

MASK64 = (1 << 64) - 1

KEYS = [
    ("", 0, 0),
    ("hello", 0, 14688674573012802306),
    ("hello", 1, 12073552422324047120),
    ("héllo wörld", 42, 13714422413447859562),
    ("😀", MAX_SEED, 8402482086979598586),
]

# (hash_seed, k, m) -> buckets[key index][row] for keys 0, 1, 2**64 − 1, value_key("hello")
BUCKETS = {
    (0, 4, 1024): [
        [441, 994, 335, 790],
        [322, 1021, 444, 968],
        [561, 967, 226, 612],
        [619, 577, 109, 67],
    ],
    (12345, 3, 1000): [[204, 176, 337], [337, 295, 843], [71, 56, 830], [999, 549, 201]],
    (MAX_SEED, 2, 2): [[0, 0], [1, 0], [1, 0], [1, 0]],
}


def reference_splitmix64(seed: int, count: int) -> list[int]:
    """Return SplitMix64's first outputs (Steele, Lea, Flood 2014) in plain integers."""
    out, state = [], seed
    for _ in range(count):
        state = (state + 0x9E3779B97F4A7C15) & MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        out.append(z ^ (z >> 31))
    return out


def reference_bucket(seed: int, m: int, key: int, row: int) -> int:
    """Return h_row(key) straight from the module docstring's formula."""
    words = reference_splitmix64(seed, 2 * row + 2)
    a, b = words[2 * row] | 1, words[2 * row + 1]
    top32 = ((a * key + b) & MASK64) >> 32
    return (top32 * m) >> 32


@pytest.mark.parametrize(("value", "seed", "key"), KEYS)
def test_value_key_golden_vectors(value: str, seed: int, key: int) -> None:
    assert value_key(value, seed) == key


def test_value_keys_match_value_key() -> None:
    values = [v for v, _, _ in KEYS]
    keys = value_keys(values, 42)
    assert keys.dtype == np.uint64
    assert [int(k) for k in keys] == [value_key(v, 42) for v in values]


def test_splitmix64_matches_the_published_sequence() -> None:
    # SplitMix64 from state 0: the first outputs every implementation agrees on
    assert [int(x) for x in splitmix64(0, 3)] == [
        0xE220A8397B1DCDAF,
        0x6E789E6AA1B965F4,
        0x06C45D188009454F,
    ]
    assert [int(x) for x in splitmix64(MAX_SEED, 8)] == reference_splitmix64(MAX_SEED, 8)


@pytest.mark.parametrize(("seed", "k", "m"), sorted(BUCKETS))
def test_row_bucket_golden_vectors(seed: int, k: int, m: int) -> None:
    hashes = RowHashes(seed, k, m)
    keys = [0, 1, MASK64, value_key("hello", seed)]
    expected = BUCKETS[(seed, k, m)]
    assert [[hashes.bucket(x, j) for j in range(k)] for x in keys] == expected
    assert [[reference_bucket(seed, m, x, j) for j in range(k)] for x in keys] == expected
    matrix = hashes.bucket_matrix(np.array(keys, dtype=np.uint64), slice(0, k))
    assert matrix.tolist() == expected


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, MAX_SEED),
    k=st.integers(1, 40),
    m=st.integers(2, 1 << 16),
    keys=st.lists(st.integers(0, MASK64), min_size=1, max_size=12),
)
def test_bucket_buckets_and_bucket_matrix_agree(seed: int, k: int, m: int, keys: list[int]) -> None:
    hashes = RowHashes(seed, k, m)
    key_array = np.array(keys, dtype=np.uint64)
    matrix = hashes.bucket_matrix(key_array, slice(0, k))
    assert matrix.shape == (len(keys), k) and matrix.dtype == np.int64
    rows = np.arange(k)
    for i, key in enumerate(keys):
        single = [hashes.bucket(key, j) for j in range(k)]
        elementwise = hashes.buckets(np.full(k, key, dtype=np.uint64), rows)
        assert single == elementwise.tolist() == matrix[i].tolist()
        assert all(0 <= b < m for b in single)
    j = k // 2
    assert reference_bucket(seed, m, keys[0], j) == int(matrix[0, j])
    tail = hashes.bucket_matrix(key_array, slice(j, k))
    assert np.array_equal(tail, matrix[:, j:])


def test_buckets_are_close_to_uniform() -> None:
    hashes = RowHashes(7, 8, 16)
    keys = value_keys([f"v{i}" for i in range(16_000)], 7)
    matrix = hashes.bucket_matrix(keys, slice(0, 8))
    for row in matrix.T:
        counts = np.bincount(row, minlength=16)
        assert counts.min() > 800 and counts.max() < 1200  # 1000 ± 6.5 SD


def test_bad_seed_and_value_types_are_refused() -> None:
    with pytest.raises(ParameterError, match="hash_seed"):
        RowHashes(MAX_SEED + 1, 2, 4)
    with pytest.raises(ParameterError, match="hash_seed"):
        RowHashes(-1, 2, 4)
    with pytest.raises(ValueOutOfDomain, match="str"):
        value_key(b"bytes", 0)
