"""Random sources for the vectors: fixed words, and an HMAC-DRBG that records its calls."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ldp_telemetry.shared.randomness import SCALE, KeyedStream


class FixedWords(KeyedStream):
    """The words a vector gives, in order, where a device would draw from its CSPRNG.

    A uniform integer below n takes words one at a time and keeps the first below
    ``2^32 − 2^32 mod n`` (mod n): the rule PROTOCOL.md §3 states for fresh draws.
    """

    def __init__(self, words: Sequence[int]) -> None:  # no DRBG state: nothing keyed
        self.given = [int(w) for w in words]
        self.used = 0

    def words(self, size: int) -> np.ndarray:
        """Return the next ``size`` given words."""
        if self.used + size > len(self.given):
            raise ValueError("the vector gives too few words")
        out = self.given[self.used : self.used + size]
        self.used += size
        return np.array(out, dtype=np.uint32)

    def below(self, n: int, size: int) -> np.ndarray:
        """Return ``size`` integers below n, one word at a time by rejection."""
        limit, out = SCALE - SCALE % n, list[int]()
        while len(out) < size:
            word = int(self.words(1)[0])
            if word < limit:
                out.append(word % n)
        return np.array(out, dtype=np.int64)


class RecordingStream(KeyedStream):
    """HMAC-DRBG (:class:`KeyedStream`) that keeps every generate call's size and output."""

    def __init__(self, key: bytes, context: bytes) -> None:
        super().__init__(key, context)
        self.calls: list[tuple[int, bytes]] = []

    def bytes(self, size: int) -> bytes:
        """Return the next ``size`` bytes (one generate call), and record them."""
        out = super().bytes(size)
        self.calls.append((size, out))
        return out
