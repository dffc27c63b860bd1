"""Optimized unary encoding (OUE), Wang et al., "Locally Differentially Private Protocols for
Frequency Estimation", USENIX Security 2017.

Symbols: d the domain size, n reports, C_v how many reports have bit v set. Client: the
value v becomes d bits, bit v set with probability p = ½ (exactly: one word below 2^31)
and every other bit with q = 1/(e^ε+1), implemented as T/2^32 rounded up. Two values'
reports differ in two bits, and the worst ratio is (p/q)·((1−q)/(1−p)) = (1−q)/q, so the
effective epsilon is ln((2^32−T)/T). The report is the d bits packed as ``np.packbits``
does (most significant bit first, zero padding): ⌈d/8⌉ bytes.

Server: f̂_v = (C_v − n·q)/(p − q); a report sets bit v with probability p if it holds v
and q otherwise, so Var = [f·p(1−p) + (n−f)·q(1−q)]/(p−q)², n·4e^ε/(e^ε−1)² for rare values.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ldp_telemetry.shared.contract import IMPLAUSIBLE_REPORT
from ldp_telemetry.shared.errors import DecodeError
from ldp_telemetry.shared.mechanisms.base import Mechanism, Plan
from ldp_telemetry.shared.mechanisms.domain import DomainMechanism, DomainParams, binomial_pmf
from ldp_telemetry.shared.mechanisms.poisoning import (
    Check,
    WeightBand,
    weight_band,
    weight_test,
)
from ldp_telemetry.shared.randomness import (
    SCALE,
    Rng,
    bernoulli_flags,
    bernoulli_packed,
    check_implementable,
    log_ratio,
    threshold_at_least,
    uniform_word,
    uniform_words,
)
from ldp_telemetry.shared.sums import Sums
from ldp_telemetry.shared.wire import b64decode, b64encode

HALF = SCALE // 2  # a word below it: the true bit is set (p = ½ exactly)
UINT16_ROWS = (1 << 16) - 1  # reports summed in uint16 at once
CHUNK_CELLS = 1 << 22  # bits unpacked at once: 4 MiB


class UnaryEncodingSums(Sums):
    """n reports and, per domain index, how many reports set that bit."""

    def __init__(self, d: int) -> None:
        super().__init__(1, d)

    def add(self, report: bytes) -> None:
        """Add one report (its packed bits)."""
        bits = np.unpackbits(np.frombuffer(report, dtype=np.uint8), count=self.table.shape[1])
        self.n[0] += 1
        self.table[0] += bits

    def add_many(self, batch: np.ndarray) -> None:
        """Add a (n, ⌈d/8⌉) uint8 array of packed reports.

        Unpacked in chunks whose columns are summed in uint16 (a chunk has fewer than 2^16
        rows, so no count overflows): 4× faster than int64 sums, and one row needs none
        of ``ldp_telemetry.shared.mechanisms.bitsum``'s grouping by row.
        """
        d = self.table.shape[1]
        step = min(UINT16_ROWS, max(1, CHUNK_CELLS // d))
        for start in range(0, len(batch), step):
            bits = np.unpackbits(batch[start : start + step], axis=1, count=d)
            self.table[0] += bits.sum(axis=0, dtype=np.uint16)
        self.n[0] += len(batch)


class OptimizedUnaryEncoding(DomainMechanism):
    """OUE over a fixed domain of strings: a report is d noisy bits."""

    name = "oue"
    payload_fields = ("bits",)

    def __init__(self, *, epsilon: float, domain: Sequence[str]) -> None:
        super().__init__(epsilon=epsilon, domain=domain)
        self.threshold_other = threshold_at_least(1.0 / (math.exp(self.epsilon) + 1.0))
        check_implementable(SCALE - self.threshold_other, self.threshold_other)
        self.p_keep, self.p_other = Fraction(1, 2), Fraction(self.threshold_other, SCALE)
        self.p, self.q = 0.5, float(self.p_other)
        self.effective_epsilon = log_ratio(SCALE - self.threshold_other, self.threshold_other)
        self.report_bytes = (self.d + 7) // 8
        self.report_bits = self.d

    def thresholds(self) -> dict[str, int]:
        """Return the integer thresholds a client compares 32-bit words with."""
        return {"keep": HALF, "other": self.threshold_other}

    def privatize(self, value: str, rng: Rng = None) -> bytes:
        """Return the privatized report of one value: d bits, packed."""
        truth = self.index_of(value)
        bits = bernoulli_packed(self.d, self.threshold_other, rng)
        mask = 0x80 >> (truth & 7)
        if uniform_word(rng) < HALF:
            bits[truth >> 3] |= mask
        else:
            bits[truth >> 3] &= ~mask & 0xFF
        return bytes(bits)

    def privatize_many(self, values: Sequence[str], rng: Rng = None) -> np.ndarray:
        """Return privatized reports of many values as a (n, ⌈d/8⌉) uint8 array."""
        truth = self.indices(values)
        flags = bernoulli_flags(len(truth) * self.d, self.threshold_other, rng)
        flags = flags.reshape(len(truth), self.d)
        flags[np.arange(len(truth)), truth] = uniform_words(len(truth), rng) < HALF
        return np.packbits(flags, axis=1)

    def stack(self, reports: Sequence[bytes]) -> np.ndarray:
        """Return decoded reports as the (n, ⌈d/8⌉) uint8 batch ``add_many`` takes."""
        raw = np.frombuffer(b"".join(reports), dtype=np.uint8)
        return raw.reshape(len(reports), self.report_bytes)

    def output_probability(self, value: str, report: Any) -> Fraction:
        """Return P(report | value) exactly (0 for a report this mechanism never sends)."""
        truth = self.index_of(value)
        if not isinstance(report, bytes) or len(report) != self.report_bytes:
            return Fraction(0)
        raw = np.unpackbits(np.frombuffer(report, dtype=np.uint8))
        if raw[self.d :].any():
            return Fraction(0)  # padding bits set
        bits = raw[: self.d]
        others = int(bits.sum()) - int(bits[truth])
        q = self.p_other
        return self.p_keep * q**others * (1 - q) ** (self.d - 1 - others)

    def encode_payload(self, report: bytes) -> dict[str, Any]:
        """Return the packed bits as base64url."""
        return {"bits": b64encode(bytes(report))}

    def decode_payload(self, obj: Mapping[str, Any]) -> bytes:
        """Return the packed bits a JSON report holds, or raise DecodeError."""
        bits = b64decode(obj["bits"], self.report_bytes, "bits")
        if self.d % 8 and bits[-1] & ((1 << (8 - self.d % 8)) - 1):
            raise DecodeError(f"bits must hold exactly d={self.d} bits: the padding bits must be 0")
        weight, band = int.from_bytes(bits, "big").bit_count(), self.band
        if not band.low <= weight <= band.high:
            raise DecodeError(
                f"{weight} of {self.d} bits set: an honest report holds {band.low} to "
                f"{band.high} but with probability below 1e-9",
                IMPLAUSIBLE_REPORT,
            )
        return bits

    @functools.cached_property
    def band(self) -> WeightBand:
        """Return the weight band an honest report stays in but with probability 1e-9."""
        return weight_band(self.d, self.p_other, keep=self.p_keep)

    def check_sums(self, sums: Sums) -> list[Check]:
        """Return the total bit weight of the reports against honest reports'."""
        return [weight_test(int(sums.table.sum()), sums.total, self.band)]

    def new_sums(self) -> UnaryEncodingSums:
        """Return an empty accumulator."""
        return UnaryEncodingSums(self.d)

    def attack_success(self) -> float:
        """Return the uniform-prior Bayes adversary's top-1 success from one report.

        The adversary guesses uniformly among the set bits (any value when none is set):
        the truth's bit is set with ½ and i−1 of the others with Bin(i−1; d−1, q).
        """
        return oue_attack_success(self.q, self.d)


def oue_attack_success(q: float, d: int) -> float:
    """Return (1/(2d))·(1−q)^(d−1) + Σ_{i=1..d} (1/(2i))·Bin(i−1; d−1, q).

    docs/design.md, Attackability.
    """
    others = binomial_pmf(d - 1, q)
    return (1 - q) ** (d - 1) / (2 * d) + float(
        sum(others[i - 1] / (2 * i) for i in range(1, d + 1))
    )


@dataclass(frozen=True)
class OptimizedUnaryEncodingParams(DomainParams):
    """oue: epsilon and the domain (its order is on the wire: bit i is value i)."""

    name = "oue"

    def build(self) -> Mechanism:
        """Return the mechanism."""
        assert self.epsilon is not None and self.domain is not None  # validate() checked
        return OptimizedUnaryEncoding(epsilon=self.epsilon, domain=self.domain)

    @classmethod
    def plan(cls, epsilon: float, domain_size: int, devices: int) -> Plan | None:
        """oue fits domains of 2 to the domain limit; a report is d bits."""
        return cls.plan_domain(epsilon, domain_size, devices, OptimizedUnaryEncoding)
