"""Apple's count-mean sketch (CMS), "Learning with Privacy at Scale", Apple 2017.

Client: pick row j uniformly from [k]; v = −1^m with v[h_j(d)] = +1; flip each coordinate
with probability q = 1/(1+e^{ε/2}); send (j, ṽ) with ṽ packed as m bits (1 = +1, numpy
``packbits`` order, zero padding). q is implemented as T/2^32 rounded up, so the effective
epsilon is 2·ln((2^32−T)/T): two coordinates differ between neighbouring values.

Server: per row j keep n_j and U[j, c] = number of +1 bits at c; with c_ε = 1/(1−2q),
f̂(d) = (m/(m−1))·(c_ε·Σ_j U[j, h_j(d)] − ((c_ε−1)/2)·n − n/m).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ldp_telemetry.shared.accuracy import cms_count_variance
from ldp_telemetry.shared.contract import IMPLAUSIBLE_REPORT
from ldp_telemetry.shared.errors import DecodeError
from ldp_telemetry.shared.mechanisms.base import Mechanism
from ldp_telemetry.shared.mechanisms.bitsum import add_bit_rows
from ldp_telemetry.shared.mechanisms.longitudinal import LONGITUDINAL_OPTION
from ldp_telemetry.shared.mechanisms.poisoning import (
    Check,
    WeightBand,
    weight_band,
    weight_test,
)
from ldp_telemetry.shared.mechanisms.sketches.base import Sketch, SketchParams
from ldp_telemetry.shared.randomness import (
    Rng,
    bernoulli_flags,
    bernoulli_packed,
    row_and_bernoulli_packed,
    uniform_below_many,
)
from ldp_telemetry.shared.shuffling.amplification import VariationRatio, two_flips
from ldp_telemetry.shared.sums import Sums
from ldp_telemetry.shared.wire import b64decode, b64encode, integer, try_b64decode

# add_many lays out ~16 reports per row at once, so each row's int64 read-modify-write is
# shared by many reports: ADD_CHUNK (k <= 8192) to MAX_ADD_CHUNK reports, <= ~180 MiB at m=1024.
ADD_CHUNK, MAX_ADD_CHUNK, REPORTS_PER_ROW = 1 << 17, 1 << 20, 16


@dataclass(frozen=True, slots=True)
class SketchReport:
    """One CMS report: the row and the m privatized bits, packed (ceil(m/8) bytes)."""

    row: int
    bits: bytes


@dataclass(frozen=True, slots=True)
class SketchBatch:
    """Many CMS reports: rows (n,) int64 and packed bits (n, ceil(m/8)) uint8."""

    rows: np.ndarray
    bits: np.ndarray

    def __len__(self) -> int:
        return len(self.rows)

    def report(self, i: int) -> SketchReport:
        """Return report i."""
        return SketchReport(int(self.rows[i]), self.bits[i].tobytes())


class CountMeanSketchSums(Sums):
    """n_j and U[j, c], the count of +1 bits at bucket c of row j."""

    def add(self, report: SketchReport) -> None:
        """Add one report."""
        bits = np.unpackbits(np.frombuffer(report.bits, dtype=np.uint8), count=self.table.shape[1])
        self.n[report.row] += 1
        self.table[report.row] += bits

    def add_many(self, batch: SketchBatch) -> None:
        """Add a batch: bits are counted per row in uint8 rounds (see ``mechanisms.bitsum``)."""
        # bincount first: a row outside [0, k) raises here, before the table changes.
        self.n += np.bincount(batch.rows, minlength=len(self.n))
        chunk = min(MAX_ADD_CHUNK, max(ADD_CHUNK, REPORTS_PER_ROW * len(self.n)))
        for start in range(0, len(batch), chunk):
            add_bit_rows(
                self.table, batch.rows[start : start + chunk], batch.bits[start : start + chunk]
            )


class CountMeanSketch(Sketch):
    """Count-mean sketch: a string becomes a row index and m noisy bits."""

    name = "cms"
    payload_fields = ("row", "bits")
    sums_class = CountMeanSketchSums
    changes = 2

    def __init__(self, *, epsilon: float, k: int, m: int, hash_seed: int) -> None:
        super().__init__(epsilon=epsilon, k=k, m=m, hash_seed=hash_seed)
        # Two coordinates differ between neighbouring values: each flip gets ε/2.
        self.set_flip(self.epsilon / 2.0)
        self.report_bytes = (self.m + 7) // 8
        self.report_bits = self.m + (self.k - 1).bit_length()

    def attack_success(self, domain_size: int) -> float:
        """Return the Bayes adversary's top-1 success over d values (rows ignored, d ≪ m).

        Values whose bucket bit is 1 are e^ε likelier: the adversary guesses among them
        (the truth's bit stays 1 with 1 − f, each other's turns 1 with f), or among all d
        when no bit is set: (1−f)·(1−(1−f)^d)/(d·f) + f(1−f)^(d−1)/d (docs/design.md,
        Attackability).
        """
        f, d = self.flip, domain_size
        return (1 - f) * (1 - (1 - f) ** d) / (d * f) + f * (1 - f) ** (d - 1) / d

    def offset_of(self, c_eps: float) -> float:
        """Return (c_ε − 1)/2: the expected share of flipped −1 bits, debiased."""
        return (c_eps - 1.0) / 2.0

    def set_noise(self, flip: Fraction) -> None:
        """Set the flip probability (the weight band follows it, computed when first used)."""
        super().set_noise(flip)
        self._band: WeightBand | None = None

    @property
    def band(self) -> WeightBand:
        """Return the weight band an honest report stays in but with probability 1e-9."""
        if self._band is None:  # ~1 ms per 1,000 bits; longitudinal searches compose often
            self._band = weight_band(self.m, self.flip_exact)
        return self._band

    def privatize(self, value: str, rng: Rng = None) -> SketchReport:
        """Return the privatized report of one value."""
        key = self.key(value)
        row, bits = row_and_bernoulli_packed(self.k, self.m, self.flip_threshold, rng)
        bucket = self.hashes.bucket(key, row)
        bits[bucket >> 3] ^= 0x80 >> (bucket & 7)  # np.packbits order: MSB first
        return SketchReport(row, bytes(bits))

    def privatize_many(self, values: Sequence[str], rng: Rng = None) -> SketchBatch:
        """Return privatized reports of many values as a batch."""
        keys = self.keys(values)
        rows = uniform_below_many(self.k, len(keys), rng)
        flips = bernoulli_flags(len(keys) * self.m, self.flip_threshold, rng)
        flips = flips.reshape(len(keys), self.m)
        flips[np.arange(len(keys)), self.hashes.buckets(keys, rows)] ^= True
        return SketchBatch(rows, np.packbits(flips, axis=1))

    def stack(self, reports: Sequence[SketchReport]) -> SketchBatch:
        """Return decoded reports as a batch for ``add_many``."""
        rows = np.fromiter((r.row for r in reports), dtype=np.int64, count=len(reports))
        bits = np.frombuffer(b"".join(r.bits for r in reports), dtype=np.uint8)
        return SketchBatch(rows, bits.reshape(len(reports), self.report_bytes))

    def variation_ratio(self) -> VariationRatio:
        """Return the shuffle accountant's parameters: two values' vectors differ in two
        coordinates of a row, each flipped with the implemented probability."""
        return two_flips(self.flip)

    def output_probability(self, value: str, report: SketchReport) -> Fraction:
        """Return P(report | value) exactly (0 for a report this mechanism never sends)."""
        key = self.key(value)
        raw = np.unpackbits(np.frombuffer(report.bits, dtype=np.uint8))
        if not 0 <= report.row < self.k or raw.size != 8 * self.report_bytes or raw[self.m :].any():
            return Fraction(0)  # wrong row, length, or padding bits set
        expected = np.zeros(self.m, dtype=np.uint8)
        expected[self.hashes.bucket(key, report.row)] = 1
        bits = raw[: self.m]
        flipped = int(np.count_nonzero(bits != expected))
        flip = self.flip_exact
        return Fraction(1, self.k) * flip**flipped * (1 - flip) ** (self.m - flipped)

    def reflip(self, report: SketchReport, threshold: int, rng: Rng = None) -> SketchReport:
        """Return the report with each of its m bits flipped with probability T/2^32."""
        flips = bernoulli_packed(self.m, threshold, rng)  # zero padding: padding stays 0
        bits = bytes(a ^ b for a, b in zip(report.bits, flips, strict=True))
        return SketchReport(report.row, bits)

    def reflip_many(self, batch: SketchBatch, threshold: int, rng: Rng = None) -> SketchBatch:
        """Return each report with each of its m bits flipped with probability T/2^32."""
        flips = bernoulli_flags(len(batch) * self.m, threshold, rng).reshape(len(batch), self.m)
        return SketchBatch(batch.rows, batch.bits ^ np.packbits(flips, axis=1))

    def encode_payload(self, report: SketchReport) -> dict[str, Any]:
        """Return the row and the packed bits as base64url."""
        return {"row": int(report.row), "bits": b64encode(report.bits)}

    def decode_payload(self, obj: Mapping[str, Any]) -> SketchReport:
        """Return the report a JSON object holds, or raise DecodeError."""
        row = obj["row"]
        if type(row) is not int or not 0 <= row < self.k:  # else integer() says why
            row = integer(obj, "row", 0, self.k - 1)
        bits = try_b64decode(obj["bits"], self.report_bytes) or b64decode(
            obj["bits"], self.report_bytes, "bits"
        )
        m = self.m
        if m % 8 and bits[-1] & ((1 << (8 - m % 8)) - 1):
            raise DecodeError(f"bits must hold exactly m={m} bits: the padding bits must be 0")
        weight = int.from_bytes(bits, "big").bit_count()
        if not self.band.low <= weight <= self.band.high:
            raise DecodeError(
                f"{weight} of {m} bits set: an honest report holds {self.band.low} to "
                f"{self.band.high} but with probability below 1e-9",
                IMPLAUSIBLE_REPORT,
            )
        return SketchReport(row, bits)

    def check_sums(self, sums: Sums) -> list[Check]:
        """Return the row-spread test and the total bit weight against honest reports'.

        The total is the one the estimate of these sums read, if it ran (row_totals).
        """
        return [
            *super().check_sums(sums),
            weight_test(self.row_totals.total(sums, [(0, self.k)]), sums.total, self.band),
        ]

    def noise_variance(self, n: int, counts: np.ndarray) -> np.ndarray:
        """Return the privatization noise variance of each count's estimate."""
        return cms_count_variance(n, counts, self.m, self.flip)


class CountMeanSketchParams(SketchParams):
    """cms: epsilon, k, m and the hash seed."""

    name = "cms"

    options = (*SketchParams.options, LONGITUDINAL_OPTION)

    def build(self) -> Mechanism:
        """Return the mechanism."""
        return self.built(CountMeanSketch)
