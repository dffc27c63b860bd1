"""What the fixed-domain mechanisms whose reports name a set of values share (oue, ss).

Each report says, for every domain value v, whether v is in it: with probability p when the device
holds v and q when it holds another value (both exact fractions of 2^32 words). So C_v, the reports
that name v, gives f̂_v = (C_v − n·q)/(p − q) with Var = [f·p(1−p) + (n−f)·q(1−q)]/(p−q)²
(:func:`ldp_telemetry.shared.accuracy.grr_count_variance`, the same two-probability form), and the
rest (domain checks, candidates, the planner's entry) is alike too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from ldp_telemetry.shared.accuracy import grr_count_variance
from ldp_telemetry.shared.errors import ParameterError, ValueOutOfDomain
from ldp_telemetry.shared.estimates import DEFAULT_LEVEL, Estimates
from ldp_telemetry.shared.mechanisms.base import (
    Option,
    ParamsBase,
    Plan,
    SingleRowMechanism,
    as_float,
    check_candidate_strings,
)
from ldp_telemetry.shared.mechanisms.poisoning import Reach, linear_reach
from ldp_telemetry.shared.sums import Sums, check_shape
from ldp_telemetry.shared.validation import check_epsilon

MAX_DOMAIN = 4096  # larger domains are the sketches' job


class DomainMechanism(SingleRowMechanism):
    """A mechanism over a fixed, ordered domain of strings with a (p, q) membership channel.

    A subclass sets ``p_keep``/``p_other`` (exact) and ``p``/``q`` (floats) and the rest of
    the randomizer.
    """

    name: ClassVar[str]
    p_keep: Fraction
    p_other: Fraction
    p: float
    q: float
    effective_epsilon: float
    report_bits: int

    def __init__(self, *, epsilon: float, domain: Sequence[str]) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.domain = check_domain(domain)
        self.d = len(self.domain)
        self._index: dict[object, int] = {value: i for i, value in enumerate(self.domain)}
        self.sums_shape = (1, self.d)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(epsilon={self.epsilon!r}, d={self.d})"

    def index_of(self, value: object) -> int:
        """Return the domain index of a value, or raise ValueOutOfDomain."""
        try:
            return self._index[value]
        except (KeyError, TypeError):
            raise ValueOutOfDomain(
                f"value is not in this task's domain of {self.d} values"
            ) from None

    def indices(self, values: Sequence[str]) -> np.ndarray:
        """Return the int64 domain indices of many values."""
        if isinstance(values, str):
            raise ValueOutOfDomain("expected a sequence of str values, got one str")
        return np.fromiter((self.index_of(v) for v in values), dtype=np.int64, count=len(values))

    def canonical(self, value: object) -> bytes:
        """Return the value's domain index as 4 bytes (raise ValueOutOfDomain if outside)."""
        return self.index_of(value).to_bytes(4, "big")

    def parse_candidates(self, raw: Any) -> list[str] | None:
        """Return the candidates (None: the whole domain); each must be in the domain."""
        if raw is None:
            return None
        values = check_candidate_strings(raw)
        outside = [c for c in values if c not in self._index]
        if outside:
            raise ParameterError(
                f"{len(outside)} candidates are not in the task's domain, e.g. {outside[0][:64]!r}"
            )
        return values

    def count_variance(self, n: int, count: Any) -> np.ndarray:
        """Return the closed-form variance of a count's estimate (``count`` of n hold it)."""
        return grr_count_variance(n, count, self.p, self.q)

    def estimate(
        self, sums: Sums, candidates: Sequence[str] | None = None, level: float = DEFAULT_LEVEL
    ) -> Estimates:
        """Estimate how many reports hold each candidate (default: the whole domain)."""
        check_shape(sums, 1, self.d, self)
        values: Sequence[str] = self.domain
        if candidates is None:  # the whole domain, in order (no lookups: a breakdown asks per row)
            counts = sums.table[0]
        else:
            values = list(candidates)
            indices = np.array([self.index_of(v) for v in values], dtype=np.int64)
            counts = sums.table[0, indices]
        n = sums.total
        estimate = (counts - n * self.q) / (self.p - self.q)
        variance = self.count_variance(n, np.minimum(np.maximum(estimate, 0.0), n))
        return Estimates.from_variance(values, estimate, variance, n, level)

    def attack_success(self) -> float:
        """Return the uniform-prior Bayes adversary's top-1 success from one report."""
        raise NotImplementedError

    def reach(self) -> Reach:
        """Return how far one report moves a count: naming the value, or not."""
        return linear_reach(1.0, 0.0, self.p, self.q)

    def thresholds(self) -> dict[str, int]:
        """Return the integer thresholds a client compares 32-bit words with."""
        raise NotImplementedError

    def derived(self) -> dict[str, int]:
        """Return the integers a device uses (published in the task JSON, PROTOCOL.md §1.3)."""
        return self.thresholds()

    def published(self) -> dict[str, Any]:
        """Return what the task's JSON publishes beside the parameters (not fingerprinted).

        ``attack_success``: the chance that an adversary who sees one report and knows
        nothing else (all d values equally likely) names the device's value.
        """
        return {"attack_success": self.attack_success()}


@dataclass(frozen=True)
class DomainParams(ParamsBase):
    """Parameters of a fixed-domain mechanism: epsilon and the domain (order on the wire)."""

    epsilon: float | None = None
    domain: tuple[str, ...] | None = None

    options: ClassVar[tuple[Option, ...]] = (
        Option("epsilon", "number", "Privacy parameter."),
        Option("domain", "strings", "grr, oue, ss: the values, in order (a report is an index)."),
    )

    def validate(self) -> None:
        """Check that both are given; the mechanism checks the rest when built."""
        object.__setattr__(self, "epsilon", as_float(self.epsilon))
        self.require("epsilon")
        if self.domain is None:
            raise ParameterError(f"{self.name} needs a domain: a list of distinct strings")
        if isinstance(self.domain, str | bytes) or not isinstance(self.domain, Sequence):
            raise ParameterError(
                f"domain must be a list of distinct strings, got {type(self.domain).__name__}"
            )
        object.__setattr__(self, "domain", tuple(self.domain))

    @classmethod
    def plan_domain(
        cls, epsilon: float, domain_size: int, devices: int, kind: type[DomainMechanism]
    ) -> Plan | None:
        """Return the plan of ``kind`` over ``domain_size`` placeholder values (2..MAX_DOMAIN)."""
        if not 2 <= domain_size <= MAX_DOMAIN:
            return None
        mechanism = kind(epsilon=epsilon, domain=[str(i) for i in range(domain_size)])
        variance = float(mechanism.count_variance(devices, devices / domain_size))
        fields = {"epsilon": epsilon, "domain": f"<your {domain_size} values>"}
        return Plan(
            fields,
            math.sqrt(variance),
            mechanism.report_bits,
            attack_success=mechanism.attack_success(),
            fake_report_worth=mechanism.reach().high,
        )


def binomial_pmf(trials: int, probability: float) -> np.ndarray:
    """Return P(Bin(trials, probability) = i) for i = 0..trials (in log space: no overflow)."""
    i = np.arange(trials + 1)
    log_choose = (
        math.lgamma(trials + 1)
        - np.array([math.lgamma(k + 1) for k in i])
        - np.array([math.lgamma(trials - k + 1) for k in i])
    )
    if probability <= 0.0:
        return (i == 0).astype(float)
    logs = log_choose + i * math.log(probability) + (trials - i) * math.log1p(-probability)
    return np.exp(logs)


def check_domain(domain: Sequence[str]) -> tuple[str, ...]:
    """Return the domain as a tuple, or raise ParameterError naming the fix."""
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
            "use cms or hcms for larger domains"
        )
    return values


def other_value(truth: Any, words: Any, threshold: int) -> Any:
    """Return the value a lying word names: number word // T, skipping the truth.

    Only words below (d−1)·T lie, so each other value has probability exactly T/2^32.
    Works on ints (one report) and on int64 arrays alike.
    """
    other = words // threshold
    return other + (other >= truth)
