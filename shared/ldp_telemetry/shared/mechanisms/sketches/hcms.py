"""Apple's Hadamard count-mean sketch (HCMS), "Learning with Privacy at Scale", Apple 2017.

Client: pick row j in [k] and column l in [m] (m a power of two); w = H_m[l, h_j(d)] where
H_m[l, c] = (−1)^popcount(l & c) is the Sylvester–Hadamard matrix; flip w with probability
p = 1/(1+e^ε) (implemented as T/2^32, rounded up); send (j, l, bit) with bit 1 for +1.
Effective epsilon: ln((2^32−T)/T).

Server: integer sums S[j, l] of the ±1 bits and n_j; M = c_ε·S·H_mᵀ row by row with a fast
Walsh–Hadamard transform (never a dense m×m matrix), c_ε = 1/(1−2p);
f̂(d) = (m/(m−1))·(Σ_j M[j, h_j(d)] − n/m).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ldp_telemetry.shared.accuracy import hcms_count_variance
from ldp_telemetry.shared.mechanisms.base import Mechanism
from ldp_telemetry.shared.mechanisms.longitudinal import LONGITUDINAL_OPTION
from ldp_telemetry.shared.mechanisms.sketches.base import Sketch, SketchParams
from ldp_telemetry.shared.randomness import (
    Rng,
    row_col_and_word,
    uniform_below_many,
    uniform_word,
    uniform_words,
)
from ldp_telemetry.shared.shuffling.amplification import VariationRatio, binary_flip
from ldp_telemetry.shared.sums import Sums
from ldp_telemetry.shared.validation import check_power_of_two
from ldp_telemetry.shared.wire import integer


@dataclass(frozen=True, slots=True)
class HadamardReport:
    """One HCMS report: row j, Hadamard column l and the privatized bit (1 means +1)."""

    row: int
    col: int
    bit: int


@dataclass(frozen=True, slots=True)
class HadamardBatch:
    """Many HCMS reports as int64 arrays rows, cols and uint8 bits."""

    rows: np.ndarray
    cols: np.ndarray
    bits: np.ndarray

    def __len__(self) -> int:
        return len(self.rows)

    def report(self, i: int) -> HadamardReport:
        """Return report i."""
        return HadamardReport(int(self.rows[i]), int(self.cols[i]), int(self.bits[i]))


class HadamardCountMeanSketchSums(Sums):
    """n_j and S[j, l], the signed sum of the ±1 bits sent for row j, column l."""

    def add(self, report: HadamardReport) -> None:
        """Add one report."""
        self.n[report.row] += 1
        self.table[report.row, report.col] += 2 * report.bit - 1

    def add_many(self, batch: HadamardBatch) -> None:
        """Add a batch of reports."""
        self.n += np.bincount(batch.rows, minlength=len(self.n))
        signs = 2 * batch.bits.astype(np.int64) - 1
        np.add.at(self.table, (batch.rows, batch.cols), signs)


def walsh_hadamard(block: np.ndarray) -> np.ndarray:
    """Return block·H_m for each row of a (rows, m) integer block, m a power of two."""
    out = np.array(block, dtype=np.int64, copy=True)
    rows, m = out.shape
    half = 1
    while half < m:
        pairs = out.reshape(rows, m // (2 * half), 2, half)
        left, right = pairs[:, :, 0, :].copy(), pairs[:, :, 1, :]
        pairs[:, :, 0, :] += right
        pairs[:, :, 1, :] = left - right
        half *= 2
    return out


class HadamardCountMeanSketch(Sketch):
    """Hadamard count-mean sketch: a string becomes a row, a column and one noisy bit."""

    name = "hcms"
    payload_fields = ("row", "col", "bit")
    sums_class = HadamardCountMeanSketchSums

    def __init__(self, *, epsilon: float, k: int, m: int, hash_seed: int) -> None:
        super().__init__(epsilon=epsilon, k=k, m=m, hash_seed=hash_seed)
        check_power_of_two("m", self.m)
        self.report_bits = 1 + (self.m - 1).bit_length() + (self.k - 1).bit_length()
        self.set_flip(self.epsilon)

    def privatize(self, value: str, rng: Rng = None) -> HadamardReport:
        """Return the privatized report of one value."""
        key = self.key(value)
        row, col, word = row_col_and_word(self.k, self.m, rng)
        plus = (col & self.hashes.bucket(key, row)).bit_count() % 2 == 0
        flipped = word < self.flip_threshold
        return HadamardReport(row, col, int(plus != flipped))

    def privatize_many(self, values: Sequence[str], rng: Rng = None) -> HadamardBatch:
        """Return privatized reports of many values as a batch."""
        keys = self.keys(values)
        rows = uniform_below_many(self.k, len(keys), rng)
        cols = uniform_below_many(self.m, len(keys), rng)
        plus = _parity(cols & self.hashes.buckets(keys, rows)) == 0
        flipped = uniform_words(len(keys), rng) < self.flip_threshold
        return HadamardBatch(rows, cols, (plus != flipped).astype(np.uint8))

    def stack(self, reports: Sequence[HadamardReport]) -> HadamardBatch:
        """Return decoded reports as a batch for ``add_many``."""
        count = len(reports)
        return HadamardBatch(
            np.fromiter((r.row for r in reports), np.int64, count),
            np.fromiter((r.col for r in reports), np.int64, count),
            np.fromiter((r.bit for r in reports), np.uint8, count),
        )

    def variation_ratio(self) -> VariationRatio:
        """Return the shuffle accountant's parameters: where two values hash apart, their
        Hadamard entries differ in half the columns; the bit is flipped with f."""
        return binary_flip(1.0 - self.flip, self.flip, share=0.5)

    def output_probability(self, value: str, report: HadamardReport) -> Fraction:
        """Return P(report | value) exactly (0 for a report this mechanism never sends)."""
        key = self.key(value)
        if not (0 <= report.row < self.k and 0 <= report.col < self.m and report.bit in (0, 1)):
            return Fraction(0)
        bucket = self.hashes.bucket(key, report.row)
        plus = (report.col & bucket).bit_count() % 2 == 0
        kept = plus == (report.bit == 1)
        return Fraction(1, self.k * self.m) * (1 - self.flip_exact if kept else self.flip_exact)

    def reflip(self, report: HadamardReport, threshold: int, rng: Rng = None) -> HadamardReport:
        """Return the report with its bit flipped with probability T/2^32."""
        flipped = int(uniform_word(rng) < threshold)
        return HadamardReport(report.row, report.col, report.bit ^ flipped)

    def reflip_many(self, batch: HadamardBatch, threshold: int, rng: Rng = None) -> HadamardBatch:
        """Return each report with its bit flipped with probability T/2^32."""
        flipped = (uniform_words(len(batch), rng) < threshold).astype(np.uint8)
        return HadamardBatch(batch.rows, batch.cols, batch.bits ^ flipped)

    def encode_payload(self, report: HadamardReport) -> dict[str, Any]:
        """Return the row, the Hadamard column and the bit."""
        return {"row": int(report.row), "col": int(report.col), "bit": int(report.bit)}

    def decode_payload(self, obj: Mapping[str, Any]) -> HadamardReport:
        """Return the report a JSON object holds, or raise DecodeError."""
        return HadamardReport(
            integer(obj, "row", 0, self.k - 1),
            integer(obj, "col", 0, self.m - 1),
            integer(obj, "bit", 0, 1),
        )

    report_extremes = (-1, 1)  # one report's ±1 bit times a Hadamard sign

    def row_transform(self, block: np.ndarray) -> np.ndarray:
        """Return M's rows (before c_ε): the Walsh–Hadamard transform of S's rows."""
        return walsh_hadamard(block)

    def noise_variance(self, n: int, counts: np.ndarray) -> np.ndarray:
        """Return the privatization noise variance of each count's estimate."""
        return hcms_count_variance(n, counts, self.m, self.flip)

    def attack_success(self, domain_size: int) -> float:
        """Return the Bayes adversary's top-1 success over d values (d ≪ m).

        The reported sign matches the truth's Hadamard entry with 1 − flip and each other
        value's with ½: the adversary guesses among the matching values,
        (1 − flip)·(1 − 2^−d)/(d/2) (docs/design.md, Attackability).
        """
        d = domain_size
        return (1 - self.flip) * (1 - 2.0**-d) / (d / 2)


class HadamardCountMeanSketchParams(SketchParams):
    """hcms: epsilon, k, m (a power of two) and the hash seed."""

    name = "hcms"

    options = (*SketchParams.options, LONGITUDINAL_OPTION)

    def build(self) -> Mechanism:
        """Return the mechanism."""
        return self.built(HadamardCountMeanSketch)


def _parity(x: np.ndarray) -> np.ndarray:
    """Return popcount(x) mod 2 elementwise for non-negative int64 below 2**32."""
    x = x ^ (x >> 16)
    x = x ^ (x >> 8)
    x = x ^ (x >> 4)
    x = x ^ (x >> 2)
    x = x ^ (x >> 1)
    return x & 1
