"""The task's hash family: one mmh3 key per value, k row hashes by multiply-shift.

A value's key is the unsigned 64-bit MurmurHash3 (x64, first half of the 128-bit digest)
of its UTF-8 bytes, seeded with the task's ``hash_seed``. Row ``j`` maps a key ``x`` to
a bucket in ``[0, m)`` with the multiply-add-shift family of Dietzfelbinger et al.,
reduced to any ``m`` by Lemire's multiply-high::

    top32 = ((a_j * x + b_j) mod 2**64) >> 32
    h_j(x) = (top32 * m) >> 32          # equals top32 >> (32 - log2 m) when m is 2**l

``a_j`` (odd) and ``b_j`` come from SplitMix64 over the seed, so the family is fixed by
``hash_seed`` alone and computed identically by numpy on every platform. The estimator
needs h_j for every (candidate, row) pair, so everything here is vectorized.
"""

from __future__ import annotations

from collections.abc import Sequence

import mmh3
import numpy as np

from ldp_telemetry.shared.errors import ParameterError, ValueOutOfDomain

MAX_SEED = (1 << 32) - 1  # mmh3 takes a 32-bit seed
_GOLDEN_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)


def value_bytes(value: object) -> bytes:
    """Return the UTF-8 bytes a string value is hashed by."""
    if not isinstance(value, str):
        raise ValueOutOfDomain(f"expected a str value, got {type(value).__name__}")
    return value.encode("utf-8", "surrogatepass")


def value_key(value: str, hash_seed: int) -> int:
    """Return the unsigned 64-bit key of one value."""
    return int(mmh3.hash64(value_bytes(value), hash_seed, signed=False)[0])


def value_keys(values: Sequence[str], hash_seed: int) -> np.ndarray:
    """Return the uint64 keys of many values."""
    return np.fromiter(
        (value_key(v, hash_seed) for v in values), dtype=np.uint64, count=len(values)
    )


def splitmix64(seed: int, count: int) -> np.ndarray:
    """Return the first ``count`` outputs of SplitMix64 started at ``seed``."""
    steps = np.arange(1, count + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = np.uint64(seed) + steps * _GOLDEN_GAMMA
        z = (z ^ (z >> np.uint64(30))) * _MIX_1
        z = (z ^ (z >> np.uint64(27))) * _MIX_2
    return z ^ (z >> np.uint64(31))


class RowHashes:
    """The k hash functions h_j: keys -> [0, m) of one task."""

    def __init__(self, hash_seed: int, k: int, m: int) -> None:
        if not 0 <= hash_seed <= MAX_SEED:
            raise ParameterError(f"hash_seed must be in [0, {MAX_SEED}], got {hash_seed}")
        words = splitmix64(hash_seed, 2 * k)
        self.hash_seed, self.k, self.m = hash_seed, k, m
        self.a = words[0::2] | np.uint64(1)
        self.b = words[1::2]
        self._a_int = [int(a) for a in self.a]
        self._b_int = [int(b) for b in self.b]

    def bucket(self, key: int, row: int) -> int:
        """Return h_row(key) for one key, in pure integer arithmetic (client hot path)."""
        mixed = (self._a_int[row] * key + self._b_int[row]) & 0xFFFFFFFFFFFFFFFF
        return ((mixed >> 32) * self.m) >> 32

    def buckets(self, keys: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Return h_rows[i](keys[i]) elementwise (broadcasting), as int64."""
        with np.errstate(over="ignore"):
            mixed = self.a[rows] * keys
            mixed += self.b[rows]
        return self._reduce(mixed).view(np.int64)

    def bucket_matrix(self, keys: np.ndarray, rows: slice) -> np.ndarray:
        """Return the (len(keys), rows) matrix of h_j(key) for j in ``rows``."""
        return self.flat_bucket_matrix(keys, rows, 0)

    def flat_bucket_matrix(self, keys: np.ndarray, rows: slice, stride: int) -> np.ndarray:
        """Return h_j(key) + (j − rows.start)·stride for each key and each j in ``rows``.

        With ``stride = m`` these index the flattened block ``table[rows]`` directly (the
        estimator's gather); every step runs in place on one uint64 matrix.
        """
        with np.errstate(over="ignore"):
            mixed = np.multiply(np.asarray(keys, dtype=np.uint64)[:, None], self.a[rows])
            mixed += self.b[rows]
        mixed = self._reduce(mixed)
        if stride:
            width = len(range(*rows.indices(self.k)))
            mixed += np.arange(0, width * stride, stride, dtype=np.uint64)
        return mixed.view(np.int64)

    def _reduce(self, mixed: np.ndarray) -> np.ndarray:
        """Map a uint64 array of a·x + b in place to buckets: ((top 32 bits)·m) >> 32."""
        if self.m >= 2 and self.m & (self.m - 1) == 0:
            # For m = 2**l that is mixed >> (64 − l): one pass instead of three.
            mixed >>= np.uint64(65 - self.m.bit_length())
        else:
            mixed >>= np.uint64(32)
            mixed *= np.uint64(self.m)
            mixed >>= np.uint64(32)
        return mixed
