"""Secure randomness and exact Bernoulli thresholds.

Every random choice that protects privacy compares a uniform ``BITS``-bit integer with an
integer threshold ``T``: ``P(draw < T) = T / 2**BITS`` exactly. A probability asked for is
rounded *up* to the next ``T / 2**BITS`` when it is a flip/lie probability, so the
mechanism actually implemented never gives more than the epsilon asked for; the effective
epsilon is then computed from ``T`` (see each mechanism).

By default draws come from the operating system's CSPRNG (``os.urandom`` / ``secrets``).
Tests and simulations may pass a seeded ``numpy.random.Generator`` as ``rng``; a
longitudinal task's permanent responses pass a :class:`KeyedStream` (HMAC-DRBG), which
gives the same draws every time for the same key.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import os
import secrets
import struct
from fractions import Fraction

import numpy as np

from ldp_telemetry.shared.errors import ParameterError

BITS = 32
SCALE = 1 << BITS


class KeyedStream:
    """A deterministic, unpredictable stream of words: HMAC-DRBG (NIST SP 800-90A, SHA-256).

    Instantiated from ``key`` (the entropy input: a device's secret-derived key) and
    ``context`` (nonce and personalization: what the draws are for), without reseeding.
    Whoever lacks the key cannot tell its output from uniform; whoever holds it gets the
    same draws again, so nothing drawn needs to be stored.
    """

    __slots__ = ("_k", "_v")

    def __init__(self, key: bytes, context: bytes) -> None:
        self._k, self._v = bytes(32), b"\x01" * 32
        self._update(key + context)

    def _hmac(self, data: bytes) -> bytes:
        return hmac.new(self._k, data, hashlib.sha256).digest()

    def _update(self, provided: bytes | None) -> None:
        self._k = self._hmac(self._v + b"\x00" + (provided or b""))
        self._v = self._hmac(self._v)
        if provided:
            self._k = self._hmac(self._v + b"\x01" + provided)
            self._v = self._hmac(self._v)

    def bytes(self, size: int) -> bytes:
        """Return the next ``size`` bytes (one HMAC-DRBG generate call)."""
        out = bytearray()
        while len(out) < size:
            self._v = self._hmac(self._v)
            out += self._v
        self._update(None)
        return bytes(out[:size])

    def words(self, size: int) -> np.ndarray:
        """Return the next ``size`` uniform ``BITS``-bit words as uint32."""
        return np.frombuffer(self.bytes(4 * size), dtype="<u4").astype(np.uint32)

    def below(self, n: int, size: int) -> np.ndarray:
        """Return ``size`` uniform integers in [0, n) as int64, by rejection (exact)."""
        if not 0 < n <= SCALE:
            raise ValueError(f"n must be in (0, 2**{BITS}], got {n}")
        limit, out = _rejection_limit(n), np.empty(0, dtype=np.int64)
        while out.size < size:
            words = self.words(size - out.size + 4).astype(np.int64)
            out = np.concatenate([out, words[words < limit] % n])
        return out[:size]


Rng = np.random.Generator | KeyedStream | None

_MAX_REJECTIONS = 64
_THREE_WORDS = struct.Struct("<III")
_SCALAR_TIES_UP_TO = 1 << 14  # below this a Python loop over ties beats numpy's overhead


def threshold_at_least(probability: float) -> int:
    """Return the smallest T with T / 2**BITS >= probability (probability in (0, 1))."""
    exact = Fraction(probability)  # the float's exact binary value, no rounding
    return math.ceil(exact * SCALE)


def check_implementable(keep: int, lie: int) -> None:
    """Raise ParameterError unless the keep threshold exceeds the lie threshold.

    When epsilon is so small that both probabilities round to the same 32-bit threshold
    (or past each other), the mechanism would be constant noise.
    """
    if keep <= lie:
        raise ParameterError("epsilon is too small to implement with 32-bit thresholds")


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
    if isinstance(rng, KeyedStream):
        return rng.words(size)
    return rng.integers(0, SCALE, size=size, dtype=np.uint32)


def uniform_word(rng: Rng = None) -> int:
    """Return one uniform ``BITS``-bit integer."""
    if rng is None:
        # os.urandom directly: half the cost of secrets.randbits, same source.
        return int.from_bytes(os.urandom(4), "little")
    if isinstance(rng, KeyedStream):
        return int(rng.words(1)[0])
    return int(rng.integers(0, SCALE, dtype=np.uint64))


def uniform_below(n: int, rng: Rng = None) -> int:
    """Return a uniform integer in [0, n)."""
    if isinstance(rng, KeyedStream):
        return int(rng.below(n, 1)[0])
    if rng is not None:
        return int(rng.integers(0, n))
    if n <= SCALE:
        # Rejection on one CSPRNG word (accepted with probability > 1/2) is exactly
        # uniform and costs a third of secrets.randbelow; the loop is bounded and falls
        # back to randbelow after _MAX_REJECTIONS unlucky words (probability < 2**-64).
        limit = _rejection_limit(n)
        for _ in range(_MAX_REJECTIONS):
            word = int.from_bytes(os.urandom(4), "little")
            if word < limit:
                return word % n
    return secrets.randbelow(n)


def bernoulli_flags(size: int, threshold: int, rng: Rng = None) -> np.ndarray:
    """Return ``size`` independent booleans, each True with probability threshold / 2**BITS.

    With a seeded ``rng`` this is ``uniform_words(size, rng) < threshold``; from the CSPRNG
    see ``_secure_draw``. The array is writable.
    """
    _check_threshold(threshold)
    if rng is not None:
        return uniform_words(size, rng) < threshold
    raw, target = _secure_draw(size, threshold)
    flags = np.frombuffer(
        bytearray(raw.translate(_BELOW_TABLES[target[0]])), dtype=np.bool_, count=size
    )
    if size <= _SCALAR_TIES_UP_TO:
        flags[_ties_below(raw, size, target, len(raw))] = True
    else:
        ties = np.flatnonzero(np.frombuffer(raw, dtype=np.uint8, count=size) == target[0])
        flags[ties] = _uniform_24(len(ties)) < (threshold & 0xFFFFFF)
    return flags


def bernoulli_packed(size: int, threshold: int, rng: Rng = None) -> bytearray:
    """Return ``bernoulli_flags(size, threshold, rng)`` packed by ``np.packbits``.

    The one-report form: packing the first-byte decisions and then setting the few tied
    flags as bits skips a writable copy of ``size`` flags.
    """
    _check_threshold(threshold)
    if rng is not None:
        return bytearray(np.packbits(uniform_words(size, rng) < threshold))
    raw, target = _secure_draw(size, threshold)
    return _pack_secure(raw, size, target, len(raw))


def row_and_bernoulli_packed(
    n: int, size: int, threshold: int, rng: Rng = None
) -> tuple[int, bytearray]:
    """Return ``uniform_below(n, rng)`` and ``bernoulli_packed(size, threshold, rng)``.

    From the CSPRNG both come from one os.urandom read (a CMS report's row and bits): the
    read's last 4 bytes are the row's first rejection-sampling word.
    """
    _check_threshold(threshold)
    if rng is not None:
        return uniform_below(n, rng), bernoulli_packed(size, threshold, rng)
    raw, target = _secure_draw(size, threshold, extra=4)
    row = _below_from_word(int.from_bytes(raw[-4:], "little"), n)
    return row, _pack_secure(raw, size, target, len(raw) - 4)


def row_col_and_word(k: int, m: int, rng: Rng = None) -> tuple[int, int, int]:
    """Return ``uniform_below(k, rng)``, ``uniform_below(m, rng)`` and ``uniform_word(rng)``.

    From the CSPRNG all three come from one os.urandom read of three words (an HCMS
    report's row, column and flip word); each word is its own, so they stay independent.
    """
    if rng is not None:
        return uniform_below(k, rng), uniform_below(m, rng), uniform_word(rng)
    row_word, col_word, word = _THREE_WORDS.unpack(os.urandom(12))
    return _below_from_word(row_word, k), _below_from_word(col_word, m), word


def _rejection_limit(n: int) -> int:
    """Return the largest multiple of n up to 2**BITS (n <= 2**BITS).

    A uniform word below it is exactly uniform mod n; words from it up are rejected.
    """
    return SCALE - SCALE % n


def _below_from_word(word: int, n: int) -> int:
    """Return a uniform integer in [0, n) from one uniform word, exactly.

    An accepted word is exactly uniform mod n; a rejected one (or n > 2**BITS) is replaced
    by a fresh independent ``uniform_below(n)``, which keeps the result exactly uniform.
    """
    if n <= SCALE and word < _rejection_limit(n):
        return word % n
    return uniform_below(n)


def _check_threshold(threshold: int) -> None:
    if not 0 <= threshold < SCALE:
        raise ValueError(f"threshold must be in [0, 2**{BITS}), got {threshold}")


def _secure_draw(size: int, threshold: int, extra: int = 0) -> tuple[bytes, bytes]:
    """Return CSPRNG bytes for ``size`` Bernoulli flags (and ``extra`` bytes at the end)
    and the threshold's 4 bytes.

    Flag i compares a uniform 32-bit word with the threshold lexicographically, most
    significant byte first: its first byte is ``raw[i]`` and the flag is decided there unless
    it equals the threshold's top byte (probability 1/256); the tied flags take their next
    bytes, one at a time while they still tie, from ``raw[size:-extra]``. That is exactly
    P(word < T) = T / 2**BITS from about one byte per flag instead of four: os.urandom is
    the client's bottleneck. ~size/256 ties are expected and ``raw`` holds four times the
    bytes they need (plus 8), so a second os.urandom call is rare.
    """
    return os.urandom(size + 8 + size // 64 + extra), threshold.to_bytes(4, "big")


def _pack_secure(raw: bytes, size: int, target: bytes, spare_end: int) -> bytearray:
    """Return the packed flags of ``_secure_draw``'s bytes (spares end at ``spare_end``)."""
    first = raw.translate(_BELOW_TABLES[target[0]])
    packed = bytearray(np.packbits(np.frombuffer(first, dtype=np.uint8, count=size)))
    for tie in _ties_below(raw, size, target, spare_end):
        packed[tie >> 3] |= 0x80 >> (tie & 7)
    return packed


def uniform_below_many(n: int, size: int, rng: Rng = None) -> np.ndarray:
    """Return ``size`` uniform integers in [0, n) as int64 (n <= 2**BITS)."""
    if isinstance(rng, KeyedStream):
        return rng.below(n, size)
    if rng is not None:
        return rng.integers(0, n, size=size, dtype=np.int64)
    # Rejection sampling on CSPRNG words keeps the choice exactly uniform.
    limit = _rejection_limit(n)
    out = np.empty(0, dtype=np.int64)
    while out.size < size:
        words = uniform_words(size - out.size + 16, None).astype(np.int64)
        out = np.concatenate([out, words[words < limit] % n])
    return out[:size]


# _BELOW_TABLES[top] is the bytes.translate table mapping a byte to 1 if it is below top.
_BELOW_TABLES = tuple(bytes(int(byte < top) for byte in range(256)) for top in range(256))


def _uniform_24(count: int) -> np.ndarray:
    """Return ``count`` uniform 24-bit integers from the CSPRNG as int64."""
    raw = np.frombuffer(os.urandom(3 * count), dtype=np.uint8).reshape(count, 3).astype(np.int64)
    return (raw[:, 0] << 16) | (raw[:, 1] << 8) | raw[:, 2]


def _ties_below(raw: bytes, size: int, target: bytes, spare_end: int) -> list[int]:
    """Return the flags among ``raw[:size]``'s ties with ``target[0]`` that end below target.

    Their next bytes come from ``raw[size:spare_end]``, then from fresh CSPRNG reads.
    """
    needle, second, below = target[:1], target[1], []
    spare, used, end = raw, size, spare_end
    tie = raw.find(needle, 0, size)
    while tie >= 0:
        if used < end and spare[used] != second:  # the usual case: the second byte decides
            if spare[used] < second:
                below.append(tie)
            used += 1
            tie = raw.find(needle, tie + 1, size)
            continue
        for level in (1, 2, 3):
            if used == end:
                spare, used, end = os.urandom(64), 0, 64
            byte = spare[used]
            used += 1
            if byte != target[level]:
                if byte < target[level]:
                    below.append(tie)
                break
        tie = raw.find(needle, tie + 1, size)
    return below
