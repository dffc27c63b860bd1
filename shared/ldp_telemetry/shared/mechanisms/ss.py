"""Subset selection (SS): Wang et al., "Mutual Information Optimally Local Private Discrete
Distribution Estimation", 2016; Ye and Barg, "Optimal Schemes for Discrete Distribution
Estimation under Locally Differential Privacy", IEEE Trans. Inf. Theory 2018.

Symbols: d the domain size, ω the subset size, n reports, C_v the reports whose subset
holds v. Client: ω = max(1, ⌊d/(e^ε+1) + ½⌋) (at most d−1), the variance-optimal size.
With probability p = ωe^ε/(ωe^ε+d−ω) the subset holds the value and ω−1 others drawn
uniformly from the d−1 others; otherwise ω of the d−1 others. The exclusion probability
(d−ω)/(ωe^ε+d−ω) is implemented as T/2^32 rounded up; a subset's probability under a value
in it is (1−T/2^32)/C(d−1, ω−1) and under one outside it (T/2^32)/C(d−1, ω), so the
effective epsilon is ln((2^32−T)·(d−ω)/(T·ω)). Uniform subsets are exact: Floyd's
algorithm over uniform integers drawn by rejection from 32-bit words. The report is the ω
indices, sorted.

Server: a report holds v with p if its device holds v and with
q = [p(ω−1) + (1−p)ω]/(d−1) otherwise, so f̂_v = (C_v − n·q)/(p − q) with
Var = [f·p(1−p) + (n−f)·q(1−q)]/(p−q)².
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ldp_telemetry.shared.errors import DecodeError, ParameterError
from ldp_telemetry.shared.mechanisms.base import Mechanism, Plan
from ldp_telemetry.shared.mechanisms.domain import DomainMechanism, DomainParams
from ldp_telemetry.shared.randomness import (
    SCALE,
    Rng,
    log_ratio,
    threshold_at_least,
    uniform_below,
    uniform_below_many,
    uniform_word,
    uniform_words,
)
from ldp_telemetry.shared.sums import Sums

CHUNK_CELLS = 1 << 22  # rows × (d−1) membership flags drawn at once: 4 MiB


def subset_size(epsilon: float, d: int) -> int:
    """Return ω = max(1, ⌊d/(e^ε+1) + ½⌋), at most d−1 (rounding half up in any language)."""
    return min(d - 1, max(1, math.floor(d / (math.exp(epsilon) + 1.0) + 0.5)))


class SubsetSums(Sums):
    """n reports and, per domain index, how many reports' subsets held it."""

    def __init__(self, d: int) -> None:
        super().__init__(1, d)

    def add(self, report: tuple[int, ...]) -> None:
        """Add one report (its sorted indices)."""
        self.n[0] += 1
        self.table[0, list(report)] += 1

    def add_many(self, batch: np.ndarray) -> None:
        """Add a (n, ω) int64 array of subsets."""
        self.n[0] += len(batch)
        self.table[0] += np.bincount(batch.ravel(), minlength=self.table.shape[1])


class SubsetSelection(DomainMechanism):
    """Subset selection over a fixed domain of strings: a report is ω sorted indices."""

    name = "ss"
    payload_fields = ("indices",)

    def __init__(self, *, epsilon: float, domain: Sequence[str]) -> None:
        super().__init__(epsilon=epsilon, domain=domain)
        d, omega = self.d, subset_size(self.epsilon, self.d)
        self.omega = omega
        e = math.exp(self.epsilon)
        self.threshold_out = threshold_at_least((d - omega) / (omega * e + d - omega))
        ratio_num, ratio_den = (
            (SCALE - self.threshold_out) * (d - omega),
            self.threshold_out * omega,
        )
        if ratio_num <= ratio_den:
            raise ParameterError("epsilon is too small to implement with 32-bit thresholds")
        self.effective_epsilon = log_ratio(ratio_num, ratio_den)
        self.p_in = Fraction(SCALE - self.threshold_out, SCALE)
        self.p_keep = self.p_in
        self.p_other = (self.p_in * (omega - 1) + (1 - self.p_in) * omega) / (d - 1)
        self.p, self.q = float(self.p_keep), float(self.p_other)
        self.report_bits = omega * (d - 1).bit_length()

    def thresholds(self) -> dict[str, int]:
        """Return ω and the threshold below which a word leaves the value out."""
        return {"subset_size": self.omega, "exclude": self.threshold_out}

    def privatize(self, value: str, rng: Rng = None) -> tuple[int, ...]:
        """Return the privatized report of one value: ω sorted domain indices."""
        truth = self.index_of(value)
        include = uniform_word(rng) >= self.threshold_out
        others = _floyd(self.d - 1, self.omega - int(include), rng)
        chosen = [i + (i >= truth) for i in others] + ([truth] if include else [])
        return tuple(sorted(chosen))

    def privatize_many(self, values: Sequence[str], rng: Rng = None) -> np.ndarray:
        """Return privatized reports of many values as a (n, ω) int64 array, rows sorted."""
        truth = self.indices(values)
        rows = max(1, CHUNK_CELLS // (self.d - 1))
        parts = [self._many(truth[s : s + rows], rng) for s in range(0, len(truth), rows)]
        return np.concatenate(parts) if parts else np.empty((0, self.omega), dtype=np.int64)

    def _many(self, truth: np.ndarray, rng: Rng) -> np.ndarray:
        """Return the subsets of one chunk: ω of the d−1 others (Floyd, one draw per step
        for every row), then in the rows that keep the value a uniformly chosen one of them
        swapped for it (a uniform ω-subset less a uniform member is a uniform (ω−1)-subset)."""
        n, others, omega = len(truth), self.d - 1, self.omega
        taken = np.zeros((n, others), dtype=np.bool_)
        rows = np.arange(n)
        for j in range(others - omega, others):
            pick = uniform_below_many(j + 1, n, rng)
            taken[rows, np.where(taken[rows, pick], j, pick)] = True
        chosen = np.nonzero(taken)[1].reshape(n, omega)
        chosen += chosen >= truth[:, None]
        include = uniform_words(n, rng).astype(np.int64) >= self.threshold_out
        drop = uniform_below_many(omega, n, rng)
        chosen[rows[include], drop[include]] = truth[include]
        return np.sort(chosen, axis=1)

    def stack(self, reports: Sequence[tuple[int, ...]]) -> np.ndarray:
        """Return decoded reports as the (n, ω) int64 batch ``add_many`` takes."""
        flat = np.fromiter(
            (i for r in reports for i in r), dtype=np.int64, count=len(reports) * self.omega
        )
        return flat.reshape(len(reports), self.omega)

    def output_probability(self, value: str, report: Any) -> Fraction:
        """Return P(report | value) exactly (0 for a report this mechanism never sends)."""
        truth = self.index_of(value)
        if not _is_subset(report, self.omega, self.d):
            return Fraction(0)
        d, omega = self.d, self.omega
        if truth in report:
            return self.p_in / math.comb(d - 1, omega - 1)
        return (1 - self.p_in) / math.comb(d - 1, omega)

    def encode_payload(self, report: Sequence[int]) -> dict[str, Any]:
        """Return the sorted indices as a JSON list."""
        return {"indices": [int(i) for i in report]}

    def decode_payload(self, obj: Mapping[str, Any]) -> tuple[int, ...]:
        """Return the subset a JSON report holds, or raise DecodeError."""
        raw = obj["indices"]
        if not isinstance(raw, list) or len(raw) != self.omega:
            raise DecodeError(f"indices must be a list of {self.omega} integers")
        if any(isinstance(i, bool) or not isinstance(i, int) for i in raw):
            raise DecodeError("indices must be integers")
        report = tuple(raw)
        if not _is_subset(report, self.omega, self.d):
            raise DecodeError(f"indices must be strictly increasing, in [0, {self.d - 1}]")
        return report

    def new_sums(self) -> SubsetSums:
        """Return an empty accumulator."""
        return SubsetSums(self.d)

    def attack_success(self) -> float:
        """Return the uniform-prior Bayes adversary's top-1 success: p/ω (guess in S)."""
        return self.p / self.omega


def _floyd(n: int, k: int, rng: Rng) -> list[int]:
    """Return a uniform k-subset of [0, n) (Floyd's algorithm; each draw exact)."""
    chosen: set[int] = set()
    for j in range(n - k, n):
        pick = uniform_below(j + 1, rng)
        chosen.add(j if pick in chosen else pick)
    return list(chosen)


def _is_subset(report: Any, omega: int, d: int) -> bool:
    """Return whether ``report`` is ω strictly increasing indices in [0, d)."""
    if not isinstance(report, tuple) or len(report) != omega:
        return False
    if any(isinstance(i, bool) or not isinstance(i, int) for i in report):
        return False
    return report[0] >= 0 and report[-1] < d and all(a < b for a, b in itertools.pairwise(report))


@dataclass(frozen=True)
class SubsetSelectionParams(DomainParams):
    """ss: epsilon and the domain (its order is on the wire: a report is indices)."""

    name = "ss"

    def build(self) -> Mechanism:
        """Return the mechanism."""
        assert self.epsilon is not None and self.domain is not None  # validate() checked
        return SubsetSelection(epsilon=self.epsilon, domain=self.domain)

    @classmethod
    def plan(cls, epsilon: float, domain_size: int, devices: int) -> Plan | None:
        """ss fits domains of 2 to the domain limit; a report is ω indices."""
        return cls.plan_domain(epsilon, domain_size, devices, SubsetSelection)
