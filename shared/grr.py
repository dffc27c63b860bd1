"""Generalized randomized response, a.k.a. direct encoding (Wang et al., USENIX Security 2017).

A value from a domain of size d is reported truthfully with probability
p = e^ε/(e^ε+d−1) and as each other value with probability q = 1/(e^ε+d−1). q is
implemented as T/2^32 rounded up, so p = 1 − (d−1)·T/2^32 and the effective epsilon is
ln(p/q) computed from T. The report is the index of a domain value. The count of value v
is estimated by (N_v − n·q)/(p − q).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from shared.accuracy import grr_count_variance
from shared.errors import ParameterError, ValueOutOfDomain
from shared.estimates import DEFAULT_LEVEL, Estimates
from shared.randomness import (
    SCALE,
    Rng,
    check_implementable,
    log_ratio,
    threshold_at_least,
    uniform_word,
    uniform_words,
)
from shared.sums import Sums, check_shape
from shared.validation import check_epsilon

MAX_DOMAIN = 4096  # larger domains are the sketches' job


class GeneralizedRandomizedResponseSums(Sums):
    """n reports and, per domain index, how many reports named it."""

    def __init__(self, d: int) -> None:
        super().__init__(1, d)

    def add(self, report: int) -> None:
        """Add one report (a domain index)."""
        self.n[0] += 1
        self.table[0, report] += 1

    def add_many(self, reports: np.ndarray) -> None:
        """Add an array of domain indices."""
        self.n[0] += len(reports)
        self.table[0] += np.bincount(reports, minlength=self.table.shape[1])


class GeneralizedRandomizedResponse:
    """k-ary randomized response over a small, fixed domain of strings."""

    name = "grr"

    def __init__(self, *, epsilon: float, domain: Sequence[str]) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.domain = _check_domain(domain)
        self.d = len(self.domain)
        self._index = {value: i for i, value in enumerate(self.domain)}
        self.threshold_other = threshold_at_least(1.0 / (math.exp(self.epsilon) + self.d - 1))
        keep = SCALE - (self.d - 1) * self.threshold_other
        check_implementable(keep, self.threshold_other)
        self.threshold_keep = keep
        self._lie_words = (self.d - 1) * self.threshold_other  # words below this lie
        self.effective_epsilon = log_ratio(keep, self.threshold_other)
        self.p, self.q = keep / SCALE, self.threshold_other / SCALE

    def __repr__(self) -> str:
        return f"GeneralizedRandomizedResponse(epsilon={self.epsilon!r}, d={self.d})"

    def index_of(self, value: str) -> int:
        """Return the domain index of a value, or raise ValueOutOfDomain."""
        try:
            return self._index[value]
        except (KeyError, TypeError):
            raise ValueOutOfDomain(
                f"value is not in this task's domain of {self.d} values") from None

    def privatize(self, value: str, rng: Rng = None) -> int:
        """Return the privatized domain index of a value."""
        truth, word = self.index_of(value), uniform_word(rng)
        # Plain ints: one report does not pay for building numpy arrays.
        return int(_other(truth, word, self.threshold_other)) if word < self._lie_words else truth

    def privatize_many(self, values: Sequence[str], rng: Rng = None) -> np.ndarray:
        """Return privatized domain indices (int64) of many values."""
        truth = np.fromiter((self.index_of(v) for v in values), dtype=np.int64, count=len(values))
        return self._from_words(truth, uniform_words(len(truth), rng))

    def _from_words(self, truth: np.ndarray, words: np.ndarray) -> np.ndarray:
        words = words.astype(np.int64)
        return np.where(words < self._lie_words, _other(truth, words, self.threshold_other), truth)

    def stack(self, reports: Sequence[int]) -> np.ndarray:
        """Return decoded reports (domain indices) as the int64 batch ``add_many`` takes."""
        return np.fromiter(reports, dtype=np.int64, count=len(reports))

    def output_probability(self, value: str, report: int) -> Fraction:
        """Return P(report | value) exactly (0 for a report this mechanism never sends)."""
        truth = self.index_of(value)
        if isinstance(report, bool) or report not in range(self.d):
            return Fraction(0)
        if report == truth:
            return Fraction(self.threshold_keep, SCALE)
        return Fraction(self.threshold_other, SCALE)

    def new_sums(self) -> GeneralizedRandomizedResponseSums:
        """Return an empty accumulator."""
        return GeneralizedRandomizedResponseSums(self.d)

    def estimate(self, sums: Sums, candidates: Sequence[str] | None = None,
                 level: float = DEFAULT_LEVEL) -> Estimates:
        """Estimate how many reports hold each candidate (default: the whole domain)."""
        check_shape(sums, 1, self.d, repr(self))
        values = list(self.domain if candidates is None else candidates)
        indices = np.array([self.index_of(v) for v in values], dtype=np.int64)
        n = sums.total
        estimate = (sums.table[0, indices] - n * self.q) / (self.p - self.q)
        variance = grr_count_variance(n, np.clip(estimate, 0, n), self.p, self.q)
        return Estimates.from_variance(values, estimate, variance, n, level)


def _other(truth: Any, words: Any, threshold: int) -> Any:
    """Return the value a lying word names: number word // T, skipping the truth.

    Only words below (d−1)·T lie, so each other value has probability exactly T/2^32.
    Works on ints (one report) and on int64 arrays alike.
    """
    other = words // threshold
    return other + (other >= truth)


def _check_domain(domain: Sequence[str]) -> tuple[str, ...]:
    if isinstance(domain, str) or not isinstance(domain, Sequence):
        raise ParameterError("domain must be a list of distinct strings")
    values = tuple(domain)
    if not all(isinstance(v, str) for v in values):
        raise ParameterError("domain must contain only strings")
    if len(set(values)) != len(values):
        raise ParameterError("domain values must be distinct")
    if not 2 <= len(values) <= MAX_DOMAIN:
        raise ParameterError(
            f"domain must have 2 to {MAX_DOMAIN} values, got {len(values)}; "
            "use cms or hcms for larger domains")
    return values
