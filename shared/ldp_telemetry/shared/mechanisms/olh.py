"""Optimized local hashing (OLH), Wang et al., "Locally Differentially Private Protocols for
Frequency Estimation", USENIX Security 2017.

Client: hash the value into g = ⌊e^ε⌋ + 1 buckets with the hash function of a row j drawn uniformly
from the task's k (the sketches' family, :mod:`ldp_telemetry.shared.hashing`, with m = g), then
report (j, y) with y the GRR of that bucket over [g]: y is the true bucket with probability p =
e^ε/(e^ε+g−1) and each other bucket with q = 1/(e^ε+g−1). q is implemented as T/2^32 rounded up, so
p = 1 − (g−1)·T/2^32 and the effective epsilon is ln(p/q) from T. The paper draws a fresh hash seed
per report; a finite family of k rows keeps the server's state a k × g table of integer counts (like
a sketch), and the per-item collision bias it adds shrinks as k grows, exactly as for CMS.

Server: per row j the counts C[j, y]. A report of another value lands in the candidate's
bucket with probability 1/g whatever its noise, so with C(d) = Σ_j C[j, h_j(d)],
f̂(d) = (C(d) − n/g)/(p − 1/g). Var = [f·p(1−p) + (n−f)·(1/g)(1−1/g)]/(p − 1/g)², which
at the optimal g is Wang et al.'s n·4e^ε/(e^ε−1)² for rare values.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ldp_telemetry.shared.accuracy import olh_count_variance
from ldp_telemetry.shared.mechanisms.base import Option, ParamsBase, Plan, as_float
from ldp_telemetry.shared.mechanisms.domain import other_value
from ldp_telemetry.shared.mechanisms.sketches.base import (
    MAX_BUCKETS,
    PLAN_K,
    Sketch,
    SketchParams,
    plan_sketch,
    with_hash_seed,
)
from ldp_telemetry.shared.randomness import (
    SCALE,
    Rng,
    check_implementable,
    log_ratio,
    threshold_at_least,
    uniform_below,
    uniform_below_many,
    uniform_word,
    uniform_words,
)
from ldp_telemetry.shared.shuffling.amplification import VariationRatio, binary_flip
from ldp_telemetry.shared.sums import Sums
from ldp_telemetry.shared.wire import integer


@dataclass(frozen=True, slots=True)
class HashedReport:
    """One OLH report: the hash row j and the privatized bucket y in [g]."""

    row: int
    index: int


@dataclass(frozen=True, slots=True)
class HashedBatch:
    """Many OLH reports as int64 arrays of rows and buckets."""

    rows: np.ndarray
    index: np.ndarray

    def __len__(self) -> int:
        return len(self.rows)

    def report(self, i: int) -> HashedReport:
        """Return report i."""
        return HashedReport(int(self.rows[i]), int(self.index[i]))


class LocalHashingSums(Sums):
    """n_j and C[j, y], how many reports of row j named bucket y."""

    def add(self, report: HashedReport) -> None:
        """Add one report."""
        self.n[report.row] += 1
        self.table[report.row, report.index] += 1

    def add_many(self, batch: HashedBatch) -> None:
        """Add a batch of reports."""
        self.n += np.bincount(batch.rows, minlength=len(self.n))
        np.add.at(self.table, (batch.rows, batch.index), 1)


def buckets_for(epsilon: float) -> int:
    """Return g = ⌊e^ε⌋ + 1, the bucket count that minimises the variance (at least 2)."""
    return min(MAX_BUCKETS, max(2, math.floor(math.exp(epsilon)) + 1))


class OptimizedLocalHashing(Sketch):
    """OLH: a string becomes a hash row and one GRR-noised bucket of g."""

    name = "olh"
    payload_fields = ("row", "index")
    sums_class = LocalHashingSums

    def __init__(self, *, epsilon: float, k: int, hash_seed: int) -> None:
        super().__init__(epsilon=epsilon, k=k, m=buckets_for(epsilon), hash_seed=hash_seed)
        g = self.g = self.m
        self.threshold_other = threshold_at_least(1.0 / (math.exp(self.epsilon) + g - 1))
        self._lie_words = (g - 1) * self.threshold_other  # words below this lie
        self.threshold_keep = SCALE - self._lie_words
        check_implementable(self.threshold_keep, self.threshold_other)
        self.effective_epsilon = log_ratio(self.threshold_keep, self.threshold_other)
        self.p, self.q = self.threshold_keep / SCALE, self.threshold_other / SCALE
        self.report_bits = (g - 1).bit_length() + (self.k - 1).bit_length()

    def derived(self) -> dict[str, Any]:
        """Return the integers a device uses (published in the task JSON, PROTOCOL.md §3.6)."""
        return {"g": self.g, "T": self.threshold_other}

    def __repr__(self) -> str:
        return (
            f"OptimizedLocalHashing(epsilon={self.epsilon!r}, k={self.k}, g={self.g}, "
            f"hash_seed={self.hash_seed})"
        )

    def privatize(self, value: str, rng: Rng = None) -> HashedReport:
        """Return the privatized report of one value."""
        key = self.key(value)
        row, word = uniform_below(self.k, rng), uniform_word(rng)
        truth = self.hashes.bucket(key, row)
        lie = word < self._lie_words
        return HashedReport(
            row, int(other_value(truth, word, self.threshold_other)) if lie else truth
        )

    def privatize_many(self, values: Sequence[str], rng: Rng = None) -> HashedBatch:
        """Return privatized reports of many values as a batch."""
        keys = self.keys(values)
        rows = uniform_below_many(self.k, len(keys), rng)
        truth = self.hashes.buckets(keys, rows)
        words = uniform_words(len(keys), rng).astype(np.int64)
        lies = other_value(truth, words, self.threshold_other)
        return HashedBatch(rows, np.where(words < self._lie_words, lies, truth))

    def stack(self, reports: Sequence[HashedReport]) -> HashedBatch:
        """Return decoded reports as a batch for ``add_many``."""
        count = len(reports)
        return HashedBatch(
            np.fromiter((r.row for r in reports), np.int64, count),
            np.fromiter((r.index for r in reports), np.int64, count),
        )

    def variation_ratio(self) -> VariationRatio:
        """Return the shuffle accountant's parameters: in a row where two values hash
        apart, their reports differ only in which bucket is kept (the worst case)."""
        return binary_flip(self.p, self.q)

    def output_probability(self, value: str, report: HashedReport) -> Fraction:
        """Return P(report | value) exactly (0 for a report this mechanism never sends)."""
        key = self.key(value)
        if not (0 <= report.row < self.k and 0 <= report.index < self.g):
            return Fraction(0)
        hit = self.hashes.bucket(key, report.row) == report.index
        threshold = self.threshold_keep if hit else self.threshold_other
        return Fraction(1, self.k) * Fraction(threshold, SCALE)

    def encode_payload(self, report: HashedReport) -> dict[str, Any]:
        """Return the row and the bucket."""
        return {"row": int(report.row), "index": int(report.index)}

    def decode_payload(self, obj: Mapping[str, Any]) -> HashedReport:
        """Return the report a JSON object holds, or raise DecodeError."""
        return HashedReport(
            integer(obj, "row", 0, self.k - 1), integer(obj, "index", 0, self.g - 1)
        )

    def debias(self, gathered: np.ndarray, n: int) -> np.ndarray:
        """Turn each candidate's Σ_j C[j, h_j(d)] into an unbiased count."""
        return (gathered - n / self.g) / (self.p - 1.0 / self.g)

    second_moment = True

    def domain_pairs(self, rows_n: np.ndarray, squares: float) -> float:
        """Return an unbiased estimate of Σ_d f(d)(f(d)−1) from the rows' second moment.

        Two reports in row j land in one bucket with probability s = p² + (g−1)q² when they
        hold one value, and 1/g (over the hash family) when they do not, so
        Σ_y C[j, y]² − n_j − n_j(n_j−1)/g estimates (s − 1/g)·Σ_d f_j(d)(f_j(d)−1); rows
        are drawn uniformly, so E[f_j(d)(f_j(d)−1)] = f(d)(f(d)−1)/k². ``squares`` is
        Σ_j Σ_y C[j, y]², summed by ``estimate`` from the row blocks it reads anyway.
        """
        n_j = np.asarray(rows_n, dtype=float)
        g = self.g
        excess = squares - n_j.sum() - float(n_j @ (n_j - 1)) / g
        same = self.p * self.p + (g - 1) * self.q * self.q
        return float(self.k * excess / (same - 1.0 / g))

    def attack_success(self, domain_size: int) -> float:
        """Return the Bayes adversary's top-1 success over d values.

        The adversary guesses among the values hashing to the reported bucket (among all
        when none does): p(1 − (1−1/g)^d)/(d/g) + (1−p)(1−1/g)^(d−1)/d (docs/design.md,
        Attackability).
        """
        d, g, p = domain_size, self.g, self.p
        return p * (1 - (1 - 1 / g) ** d) / (d / g) + (1 - p) * (1 - 1 / g) ** (d - 1) / d

    def noise_variance(self, n: int, counts: np.ndarray) -> np.ndarray:
        """Return the privatization noise variance of each count's estimate."""
        return olh_count_variance(n, counts, self.g, self.p)


@dataclass(frozen=True)
class OptimizedLocalHashingParams(ParamsBase):
    """olh: epsilon (which sets g), k hash rows and the hash seed (drawn for a new task)."""

    epsilon: float | None = None
    k: int | None = None
    hash_seed: int | None = None

    name = "olh"
    options = (
        Option("epsilon", "number", "Privacy parameter (olh: sets g = floor(e^eps)+1)."),
        Option("k", "integer", "Hash rows (olh: more rows, smaller collision bias)."),
        SketchParams.options[3],
    )

    @classmethod
    def defaults_for_new_task(cls, given: dict[str, Any]) -> dict[str, Any]:
        """Draw a random hash seed unless one is given."""
        return with_hash_seed(given)

    def validate(self) -> None:
        """Check that every parameter is given; the mechanism checks their ranges."""
        object.__setattr__(self, "epsilon", as_float(self.epsilon))
        self.require("epsilon")
        self.require("k", "hash_seed")

    def build(self) -> OptimizedLocalHashing:
        """Return the mechanism."""
        assert self.epsilon is not None and self.k is not None and self.hash_seed is not None
        return OptimizedLocalHashing(epsilon=self.epsilon, k=self.k, hash_seed=self.hash_seed)

    @classmethod
    def plan(cls, epsilon: float, domain_size: int, devices: int) -> Plan | None:
        """Plan with k = 2048 hash rows (g follows from epsilon)."""
        return plan_sketch(
            cls.from_fields({"epsilon": epsilon, "k": PLAN_K, "hash_seed": 0}), domain_size, devices
        )
