"""Generalized randomized response, a.k.a. direct encoding (Wang et al., USENIX Security 2017).

A value from a domain of size d is reported truthfully with probability
p = e^ε/(e^ε+d−1) and as each other value with probability q = 1/(e^ε+d−1). q is
implemented as T/2^32 rounded up, so p = 1 − (d−1)·T/2^32 and the effective epsilon is
ln(p/q) computed from T. The report is the index of a domain value. The count of value v
is estimated by (N_v − n·q)/(p − q).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ldp_telemetry.shared.accuracy import grr_count_variance
from ldp_telemetry.shared.errors import ParameterError
from ldp_telemetry.shared.estimates import Estimates
from ldp_telemetry.shared.mechanisms import longitudinal
from ldp_telemetry.shared.mechanisms.base import (
    Mechanism,
    Option,
    ParamsBase,
    Plan,
    as_float,
)
from ldp_telemetry.shared.mechanisms.domain import MAX_DOMAIN, DomainMechanism, other_value
from ldp_telemetry.shared.mechanisms.lifetime import spec as loloha_spec
from ldp_telemetry.shared.mechanisms.lifetime.loloha import LocalHashingLongitudinal
from ldp_telemetry.shared.mechanisms.longitudinal import LONGITUDINAL_OPTION, LongitudinalSpec
from ldp_telemetry.shared.randomness import (
    SCALE,
    Rng,
    check_implementable,
    log_ratio,
    threshold_at_least,
    uniform_word,
    uniform_words,
)
from ldp_telemetry.shared.shuffling.amplification import VariationRatio, binary_flip
from ldp_telemetry.shared.sums import Sums
from ldp_telemetry.shared.wire import canonical_json, integer


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


class GeneralizedRandomizedResponse(DomainMechanism):
    """k-ary randomized response over a small, fixed domain of strings.

    The domain checks, candidates, estimator (a report names one value: p, q) and reach
    are :class:`DomainMechanism`'s.
    """

    name = "grr"
    payload_fields = ("index",)

    def __init__(self, *, epsilon: float, domain: Sequence[str]) -> None:
        super().__init__(epsilon=epsilon, domain=domain)
        self.threshold_other = threshold_at_least(1.0 / (math.exp(self.epsilon) + self.d - 1))
        keep = SCALE - (self.d - 1) * self.threshold_other
        check_implementable(keep, self.threshold_other)
        self.threshold_keep = keep
        self._lie_words = (self.d - 1) * self.threshold_other  # words below this lie
        self._set_channel(Fraction(keep, SCALE), Fraction(self.threshold_other, SCALE))

    def _set_channel(self, keep: Fraction, other: Fraction) -> None:
        """Set P(report = value) and P(report = each other value) exactly, and what the
        estimator and the effective epsilon derive from them."""
        self.p_keep, self.p_other = keep, other
        self.effective_epsilon = log_ratio(
            keep.numerator * other.denominator, other.numerator * keep.denominator
        )
        self.p, self.q = float(keep), float(other)

    def derived(self) -> dict[str, Any]:
        """Return the integers a device uses (published in the task JSON, PROTOCOL.md §3.3)."""
        return {"T": self.threshold_other}

    def published(self) -> dict[str, Any]:
        """Return what the task's JSON publishes beside the parameters (not fingerprinted).

        ``attack_success``: the chance that an adversary who sees one report, and holds
        every domain value equally likely beforehand, names the device's value: p, by
        guessing the value reported.
        """
        return {"attack_success": self.p}

    def privatize(self, value: str, rng: Rng = None) -> int:
        """Return the privatized domain index of a value."""
        truth, word = self.index_of(value), uniform_word(rng)
        # Plain ints: one report does not pay for building numpy arrays.
        if word < self._lie_words:
            return int(other_value(truth, word, self.threshold_other))
        return truth

    def privatize_many(self, values: Sequence[str], rng: Rng = None) -> np.ndarray:
        """Return privatized domain indices (int64) of many values."""
        truth = np.fromiter((self.index_of(v) for v in values), dtype=np.int64, count=len(values))
        return self._from_words(truth, uniform_words(len(truth), rng))

    def _from_words(self, truth: np.ndarray, words: np.ndarray) -> np.ndarray:
        words = words.astype(np.int64)
        lies = other_value(truth, words, self.threshold_other)
        return np.where(words < self._lie_words, lies, truth)

    def stack(self, reports: Sequence[int]) -> np.ndarray:
        """Return decoded reports (domain indices) as the int64 batch ``add_many`` takes."""
        return np.fromiter(reports, dtype=np.int64, count=len(reports))

    def variation_ratio(self) -> VariationRatio:
        """Return the shuffle accountant's parameters: two values' reports differ only in
        which of their two indices is kept (Wang et al. 2023, k-RR)."""
        return binary_flip(float(self.p_keep), float(self.p_other))

    def output_probability(self, value: str, report: int) -> Fraction:
        """Return P(report | value) exactly (0 for a report this mechanism never sends)."""
        truth = self.index_of(value)
        if isinstance(report, bool) or report not in range(self.d):
            return Fraction(0)
        return self.p_keep if report == truth else self.p_other

    # -- as a longitudinal task's permanent layer (ldp_telemetry.shared.mechanisms.longitudinal)
    # ---------

    def irr_threshold(self, flip: float) -> int:
        """Return the threshold T that moves the index to each other value with T/2^32
        (to some other value with flip = (d−1)·T/2^32, below (d−1)/d)."""
        return longitudinal.flip_threshold(flip, self.d - 1, self.irr_limit())

    def irr_limit(self) -> int:
        """Return the threshold at which every index is equally likely (pure noise)."""
        return -(-SCALE // self.d)

    def compose_flip(self, threshold: int) -> GeneralizedRandomizedResponse:
        """Return the mechanism whose index is this one's moved to each other value with
        probability T/2^32."""
        move = Fraction(threshold, SCALE)
        stay = 1 - (self.d - 1) * move
        keep, other = self.p_keep, self.p_other
        composed = copy.copy(self)
        composed._set_channel(
            keep * stay + (self.d - 1) * other * move,
            keep * move + other * stay + (self.d - 2) * other * move,
        )
        return composed

    def reflip(self, report: int, threshold: int, rng: Rng = None) -> int:
        """Return the index moved to each other value with probability T/2^32."""
        word = uniform_word(rng)
        if word < (self.d - 1) * threshold:
            return int(other_value(report, word, threshold))
        return report

    def reflip_many(self, batch: np.ndarray, threshold: int, rng: Rng = None) -> np.ndarray:
        """Return each index moved to each other value with probability T/2^32."""
        words = uniform_words(len(batch), rng).astype(np.int64)
        moved = other_value(batch, words, threshold)
        return np.where(words < (self.d - 1) * threshold, moved, batch)

    def encode_payload(self, report: int) -> dict[str, Any]:
        """Return the report's JSON field."""
        return {"index": int(report)}

    def decode_payload(self, obj: Mapping[str, Any]) -> int:
        """Return the domain index a JSON report holds, or raise DecodeError."""
        return integer(obj, "index", 0, self.d - 1)

    def new_sums(self) -> GeneralizedRandomizedResponseSums:
        """Return an empty accumulator."""
        return GeneralizedRandomizedResponseSums(self.d)

    def answer_variance(self, estimates: Estimates) -> np.ndarray:
        """Return the noise variance of each answered count at its estimate."""
        n = estimates.n
        return self.count_variance(n, np.clip(np.asarray(estimates.estimate, float), 0, n))


@dataclass(frozen=True)
class GeneralizedRandomizedResponseParams(ParamsBase):
    """grr: epsilon and the domain (its order is on the wire: a report is an index)."""

    epsilon: float | None = None
    domain: tuple[str, ...] | None = None
    longitudinal: LongitudinalSpec | loloha_spec.LocalHashingSpec | None = None

    name = "grr"
    options = (
        Option("epsilon", "number", "Privacy parameter."),
        Option("domain", "strings", "grr: the values, in order (a report is an index)."),
        LONGITUDINAL_OPTION,
    )

    @classmethod
    def defaults_for_new_task(cls, given: dict[str, Any]) -> dict[str, Any]:
        """Draw a LOLOHA option's hash seed unless one is given."""
        if "longitudinal" in given:
            return {
                **given,
                "longitudinal": loloha_spec.with_drawn_hash_seed(given["longitudinal"]),
            }
        return given

    def validate(self) -> None:
        """Check that both are given; the mechanism checks the rest when built."""
        object.__setattr__(self, "epsilon", as_float(self.epsilon))
        spec: LongitudinalSpec | loloha_spec.LocalHashingSpec | None
        if loloha_spec.is_local_hashing(self.longitudinal):
            size = len(self.domain) if isinstance(self.domain, Sequence) else 2  # checked below
            spec = loloha_spec.LocalHashingSpec.parse(self.longitudinal, domain_size=size)
            longitudinal.refuse_epsilon_beside(self.epsilon)
        else:
            spec = longitudinal.check_epsilon_left_out(self.epsilon, self.longitudinal)
        object.__setattr__(self, "longitudinal", spec)
        if spec is None:
            self.require("epsilon")
        if self.domain is None:
            raise ParameterError("grr needs a domain: a list of distinct strings")
        # tuple("abc") would silently turn a string into the domain ('a', 'b', 'c')
        if isinstance(self.domain, str | bytes) or not isinstance(self.domain, Sequence):
            raise ParameterError(
                f"domain must be a list of distinct strings, got {type(self.domain).__name__}"
            )
        object.__setattr__(self, "domain", tuple(self.domain))

    def build(self) -> Mechanism:
        """Return the mechanism."""
        assert self.domain is not None  # validate() checked
        if isinstance(self.longitudinal, loloha_spec.LocalHashingSpec):
            assert self.epsilon is None
            domain = GeneralizedRandomizedResponse(
                epsilon=self.longitudinal.epsilon_inf, domain=self.domain
            )
            return LocalHashingLongitudinal(
                domain, self.longitudinal, canonical_json(self.to_fields())
            )
        if self.longitudinal is not None:
            permanent = GeneralizedRandomizedResponse(
                epsilon=self.longitudinal.epsilon_inf, domain=self.domain
            )
            return longitudinal.Longitudinal(
                permanent, self.longitudinal, canonical_json(self.to_fields())
            )
        assert self.epsilon is not None  # validate() checked
        return GeneralizedRandomizedResponse(epsilon=self.epsilon, domain=self.domain)

    @classmethod
    def plan(cls, epsilon: float, domain_size: int, devices: int) -> Plan | None:
        """grr fits domains of 3 to MAX_DOMAIN values (rr is grr at 2)."""
        if not 3 <= domain_size <= MAX_DOMAIN:
            return None
        grr = GeneralizedRandomizedResponse(
            epsilon=epsilon, domain=[str(i) for i in range(domain_size)]
        )
        variance = grr_count_variance(devices, devices / domain_size, grr.p, grr.q)
        fields = {"epsilon": epsilon, "domain": f"<your {domain_size} values>"}
        bits = math.ceil(math.log2(domain_size))
        # The Bayes adversary guesses the reported value: right with p = e^ε/(e^ε+d−1).
        return Plan(
            fields,
            math.sqrt(float(variance)),
            bits,
            attack_success=grr.p,
            fake_report_worth=grr.reach().high,
        )
