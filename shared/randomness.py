"""Secure randomness and exact Bernoulli thresholds.

Every random choice that protects privacy compares a uniform ``BITS``-bit integer with an
integer threshold ``T``: ``P(draw < T) = T / 2**BITS`` exactly. A probability asked for is
rounded *up* to the next ``T / 2**BITS`` when it is a flip/lie probability, so the
mechanism actually implemented never gives more than the epsilon asked for; the effective
epsilon is then computed from ``T`` (see each mechanism).

By default draws come from the operating system's CSPRNG (``os.urandom`` / ``secrets``).
Tests and simulations may pass a seeded ``numpy.random.Generator`` as ``rng``.
"""

from __future__ import annotations

import math
import os
import secrets
from fractions import Fraction

import numpy as np

BITS = 32
SCALE = 1 << BITS

Rng = np.random.Generator | None


def threshold_at_least(probability: float) -> int:
    """Return the smallest T with T / 2**BITS >= probability (probability in (0, 1))."""
    exact = Fraction(probability)  # the float's exact binary value, no rounding
    return math.ceil(exact * SCALE)


def log_ratio(numerator: int, denominator: int) -> float:
    """Return ln(numerator / denominator) for positive integers.

    Python's int / int is correctly rounded, so an exact ratio such as 3 gives ln 3 to the
    last bit (a difference of two logs would not).
    """
    return math.log(numerator / denominator)


def uniform_words(size: int, rng: Rng = None) -> np.ndarray:
    """Return ``size`` independent uniform ``BITS``-bit integers as a uint32 array."""
    if rng is None:
        return np.frombuffer(os.urandom(4 * size), dtype=np.uint32)
    return rng.integers(0, SCALE, size=size, dtype=np.uint32)


def uniform_word(rng: Rng = None) -> int:
    """Return one uniform ``BITS``-bit integer."""
    if rng is None:
        return secrets.randbits(BITS)
    return int(rng.integers(0, SCALE, dtype=np.uint64))


def uniform_below(n: int, rng: Rng = None) -> int:
    """Return a uniform integer in [0, n)."""
    if rng is None:
        return secrets.randbelow(n)
    return int(rng.integers(0, n))


def uniform_below_many(n: int, size: int, rng: Rng = None) -> np.ndarray:
    """Return ``size`` uniform integers in [0, n) as int64 (n <= 2**BITS)."""
    if rng is not None:
        return rng.integers(0, n, size=size, dtype=np.int64)
    # Rejection sampling on CSPRNG words keeps the choice exactly uniform.
    limit = (SCALE // n) * n
    out = np.empty(0, dtype=np.int64)
    while out.size < size:
        words = uniform_words(size - out.size + 16, None).astype(np.int64)
        out = np.concatenate([out, words[words < limit] % n])
    return out[:size]
