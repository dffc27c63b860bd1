"""Binary randomized response (Warner, JASA 1965), in the seeds' alpha/beta form.

With probability alpha answer truthfully, otherwise answer "yes" with probability beta:
P(1|1) = alpha + (1−alpha)·beta, P(1|0) = (1−alpha)·beta. Epsilon is the log of the larger of
P(1|1)/P(1|0) and P(0|0)/P(0|1); alpha = beta = 1/2 gives ln 3. Built from epsilon instead,
the truth is kept with probability e^ε/(1+e^ε) (alpha = (e^ε−1)/(e^ε+1), beta = 1/2).

Both answer probabilities are implemented as thresholds T/2^32 rounded towards privacy
(P(1|0) up, P(1|1) down); the estimator and the effective epsilon use those thresholds.
The count of yes is estimated by (ones − n·P(1|0)) / (P(1|1) − P(1|0)).
"""

from __future__ import annotations

import copy
import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ldp_telemetry.shared.accuracy import rr_count_variance
from ldp_telemetry.shared.errors import ParameterError, ValueOutOfDomain
from ldp_telemetry.shared.estimates import DEFAULT_LEVEL, Estimates
from ldp_telemetry.shared.mechanisms import longitudinal
from ldp_telemetry.shared.mechanisms.base import (
    Mechanism,
    Option,
    ParamsBase,
    Plan,
    SingleRowMechanism,
    as_float,
)
from ldp_telemetry.shared.mechanisms.longitudinal import LONGITUDINAL_OPTION, LongitudinalSpec
from ldp_telemetry.shared.mechanisms.poisoning import Reach
from ldp_telemetry.shared.randomness import (
    SCALE,
    Rng,
    check_implementable,
    threshold_at_least,
    uniform_word,
    uniform_words,
)
from ldp_telemetry.shared.shuffling.amplification import VariationRatio
from ldp_telemetry.shared.sums import Sums, check_shape
from ldp_telemetry.shared.validation import MAX_EPSILON, check_epsilon, check_unit_interval
from ldp_telemetry.shared.wire import canonical_json, integer

ANSWERS = (True, False)  # what estimate() reports on when given no candidates


class RandomizedResponseSums(Sums):
    """n reports and the number of 1 answers (table[0, 0])."""

    def __init__(self) -> None:
        super().__init__(1, 1)

    def add(self, report: int) -> None:
        """Add one report (0 or 1)."""
        self.n[0] += 1
        self.table[0, 0] += report

    def add_many(self, reports: np.ndarray) -> None:
        """Add an array of 0/1 reports."""
        self.n[0] += len(reports)
        self.table[0, 0] += int(np.count_nonzero(reports))


class RandomizedResponse(SingleRowMechanism):
    """Binary randomized response: a yes/no value becomes one privatized bit."""

    name = "rr"
    payload_fields = ("bit",)
    sums_shape = (1, 1)

    def __init__(
        self, *, epsilon: float | None = None, alpha: float | None = None, beta: float | None = None
    ) -> None:
        if epsilon is not None:
            if alpha is not None or beta is not None:
                raise ParameterError("give either epsilon or alpha and beta, not both")
            self.epsilon = check_epsilon(epsilon)
            lie = threshold_at_least(1.0 / (1.0 + math.exp(self.epsilon)))
            self.threshold_yes, self.threshold_no = SCALE - lie, lie
            self.alpha, self.beta = None, None
        else:
            if alpha is None or beta is None:
                raise ParameterError("give epsilon, or both alpha and beta")
            self.alpha, self.beta = _check_alpha_beta(alpha, beta)
            self.epsilon, self.threshold_yes, self.threshold_no = _from_alpha_beta(
                self.alpha, self.beta
            )
            if self.epsilon > MAX_EPSILON:
                raise ParameterError(
                    f"alpha={alpha} and beta={beta} give epsilon {self.epsilon:.3g}, above the "
                    f"maximum {MAX_EPSILON}: move beta away from 0 and 1 or lower alpha"
                )
        check_implementable(self.threshold_yes, self.threshold_no)
        self._set_answers(Fraction(self.threshold_yes, SCALE), Fraction(self.threshold_no, SCALE))

    def _set_answers(self, p_yes: Fraction, p_no: Fraction) -> None:
        """Set P(1|yes) and P(1|no) exactly, and what the estimator and epsilon derive."""
        self.p_one = {True: p_yes, False: p_no}
        self.effective_epsilon = max(_log(p_yes / p_no), _log((1 - p_no) / (1 - p_yes)))
        self.p11, self.p10 = float(p_yes), float(p_no)

    def __repr__(self) -> str:
        return f"RandomizedResponse(epsilon={self.epsilon!r})"

    def derived(self) -> dict[str, Any]:
        """Return the integers a device uses (published in the task JSON, PROTOCOL.md §3.2)."""
        return {"T_yes": self.threshold_yes, "T_no": self.threshold_no}

    def published(self) -> dict[str, Any]:
        """Return what the task's JSON publishes beside the parameters (not fingerprinted).

        ``attack_success``: the chance that an adversary who sees one answer, and holds yes
        and no equally likely beforehand, names the device's (it guesses the answer sent).
        """
        return {"attack_success": (self.p11 + 1.0 - self.p10) / 2.0}

    def privatize(self, value: bool, rng: Rng = None) -> int:
        """Return the privatized answer (0 or 1) to a yes/no value."""
        threshold = self.threshold_yes if check_answer(value) else self.threshold_no
        return int(uniform_word(rng) < threshold)

    def privatize_many(self, values: Sequence[bool] | np.ndarray, rng: Rng = None) -> np.ndarray:
        """Return privatized answers (uint8 0/1) to many yes/no values."""
        truth = np.asarray(values)
        if truth.dtype != np.bool_:
            truth = np.array([check_answer(v) for v in values], dtype=bool)
        thresholds = np.where(truth, self.threshold_yes, self.threshold_no)
        return (uniform_words(len(truth), rng) < thresholds).astype(np.uint8)

    def variation_ratio(self) -> VariationRatio:
        """Return the shuffle accountant's parameters from the implemented answers."""
        p_yes, p_no = self.p_one[True], self.p_one[False]
        ratio = math.exp(self.effective_epsilon)
        return VariationRatio(ratio, float(p_yes - p_no), ratio)

    def output_probability(self, value: bool, report: int) -> Fraction:
        """Return P(report | value) exactly (0 for a report this mechanism never sends)."""
        p_one = self.p_one[check_answer(value)]
        if isinstance(report, bool) or report not in (0, 1):
            return Fraction(0)
        return p_one if report == 1 else 1 - p_one

    def reach(self) -> Reach:
        """Return how far one answer moves the count of yes (or of no) at most."""
        spread = self.p11 - self.p10
        return Reach(
            min(-self.p10, self.p11 - 1.0) / spread, max(1.0 - self.p10, self.p11) / spread
        )

    # -- as a longitudinal task's permanent layer (ldp_telemetry.shared.mechanisms.longitudinal)
    # ---------

    def irr_threshold(self, flip: float) -> int:
        """Return the threshold that flips the answer with probability ``flip`` (< 1/2)."""
        return longitudinal.flip_threshold(flip, 1, self.irr_limit())

    def irr_limit(self) -> int:
        """Return the threshold of a flip with probability 1/2 (the answer is then noise)."""
        return SCALE // 2

    def compose_flip(self, threshold: int) -> RandomizedResponse:
        """Return the mechanism whose answer is this one's, flipped with T/2^32."""
        flip = Fraction(threshold, SCALE)
        composed = copy.copy(self)
        yes, no = self.p_one[True], self.p_one[False]
        composed._set_answers(longitudinal.flipped(yes, flip), longitudinal.flipped(no, flip))
        return composed

    def reflip(self, report: int, threshold: int, rng: Rng = None) -> int:
        """Return the answer flipped with probability T/2^32."""
        return report ^ int(uniform_word(rng) < threshold)

    def reflip_many(self, batch: np.ndarray, threshold: int, rng: Rng = None) -> np.ndarray:
        """Return each answer flipped with probability T/2^32."""
        return batch ^ (uniform_words(len(batch), rng) < threshold).astype(np.uint8)

    def canonical(self, value: object) -> bytes:
        """Return one byte identifying a yes/no value (raise ValueOutOfDomain otherwise)."""
        return b"\x01" if check_answer(value) else b"\x00"

    def encode_payload(self, report: int) -> dict[str, Any]:
        """Return the report's JSON field."""
        return {"bit": int(report)}

    def decode_payload(self, obj: Mapping[str, Any]) -> int:
        """Return the bit a JSON report holds, or raise DecodeError."""
        return integer(obj, "bit", 0, 1)

    def parse_candidates(self, raw: Any) -> None:
        """Refuse candidates: rr always estimates yes and no."""
        if raw is not None:
            raise ParameterError("rr tasks estimate yes and no: leave out candidates")

    def new_sums(self) -> RandomizedResponseSums:
        """Return an empty accumulator."""
        return RandomizedResponseSums()

    def stack(self, reports: Sequence[int]) -> np.ndarray:
        """Return decoded reports (0/1) as the uint8 batch ``add_many`` takes."""
        return np.fromiter(reports, dtype=np.uint8, count=len(reports))

    def estimate(
        self, sums: Sums, candidates: Sequence[bool] | None = None, level: float = DEFAULT_LEVEL
    ) -> Estimates:
        """Estimate how many reports hold each of ``candidates`` (default: True, False)."""
        check_shape(sums, 1, 1, self)
        n, ones = sums.total, int(sums.table[0, 0])
        yes = (ones - n * self.p10) / (self.p11 - self.p10)
        wanted = [check_answer(c) for c in (ANSWERS if candidates is None else candidates)]
        estimate = np.array([yes if c else n - yes for c in wanted], dtype=float)
        yes_clipped = min(max(yes, 0.0), float(n))
        variance = np.full(len(wanted), rr_count_variance(n, yes_clipped, self.p11, self.p10))
        return Estimates.from_variance(wanted, estimate, variance, n, level)

    def answer_variance(self, estimates: Estimates) -> np.ndarray:
        """Return the noise variance of each answered count at its estimate (a False count
        is n − yes, with the yes count's variance)."""
        n = estimates.n
        counts = np.asarray(estimates.estimate, float)
        yes = np.where([bool(v) for v in estimates.values], counts, n - counts)
        return rr_count_variance(n, np.clip(yes, 0, n), self.p11, self.p10)


@dataclass(frozen=True)
class RandomizedResponseParams(ParamsBase):
    """rr: epsilon, or the seeds' alpha and beta."""

    epsilon: float | None = None
    alpha: float | None = None
    beta: float | None = None
    longitudinal: LongitudinalSpec | None = None

    name = "rr"
    options = (
        Option("epsilon", "number", "Privacy parameter (or --alpha and --beta)."),
        Option("alpha", "number", "rr only, with --beta, instead of --epsilon."),
        Option("beta", "number", "rr only: P(yes) when not answering truthfully."),
        LONGITUDINAL_OPTION,
    )
    exclusive = (frozenset({"alpha", "beta"}), "alpha and beta are only for rr")

    def validate(self) -> None:
        """Normalise numbers; the mechanism checks the rest when built."""
        for name in ("epsilon", "alpha", "beta"):
            object.__setattr__(self, name, as_float(getattr(self, name)))
        spec = longitudinal.check_epsilon_left_out(self.epsilon, self.longitudinal)
        if spec is not None and (self.alpha is not None or self.beta is not None):
            raise ParameterError("a longitudinal rr task takes no alpha and beta")
        object.__setattr__(self, "longitudinal", spec)

    def build(self) -> Mechanism:
        """Return the mechanism."""
        if self.longitudinal is not None:
            permanent = RandomizedResponse(epsilon=self.longitudinal.epsilon_inf)
            return longitudinal.Longitudinal(
                permanent, self.longitudinal, canonical_json(self.to_fields())
            )
        return RandomizedResponse(epsilon=self.epsilon, alpha=self.alpha, beta=self.beta)

    @classmethod
    def plan(cls, epsilon: float, domain_size: int, devices: int) -> Plan | None:
        """rr answers yes/no questions only (a domain of 2)."""
        if domain_size != 2:
            return None
        rr = RandomizedResponse(epsilon=epsilon)
        variance = rr_count_variance(devices, devices / 2, rr.p11, rr.p10)
        # The Bayes adversary guesses the answer sent: right with (P11 + 1 − P10)/2.
        success = (rr.p11 + 1 - rr.p10) / 2
        return Plan(
            {"epsilon": epsilon},
            math.sqrt(float(variance)),
            1,
            attack_success=success,
            fake_report_worth=rr.reach().high,
        )


def check_answer(value: object) -> bool:
    """Return a yes/no value as a bool, or raise ValueOutOfDomain.

    Accepted: bool, numpy.bool_, and integers (numpy's too: iterating an int array yields
    np.int64) equal to 0 or 1. The client validates with this rule, so it refuses exactly
    what ``privatize`` would.
    """
    if isinstance(value, bool | np.bool_) or (
        isinstance(value, numbers.Integral) and value in (0, 1)
    ):
        return bool(value)
    raise ValueOutOfDomain(f"randomized response takes a bool, got {type(value).__name__}")


def _check_alpha_beta(alpha: float, beta: float) -> tuple[float, float]:
    alpha = check_unit_interval("alpha", alpha)
    beta = check_unit_interval("beta", beta)
    if alpha == 1.0:
        raise ParameterError("alpha=1 always answers truthfully: no privacy; use alpha < 1")
    if alpha == 0.0:
        raise ParameterError("alpha=0 makes answers independent of the truth; use alpha > 0")
    if beta in (0.0, 1.0):
        raise ParameterError(
            f"beta={beta} lets one answer reveal the truth (infinite epsilon); use 0 < beta < 1"
        )
    return alpha, beta


def _from_alpha_beta(alpha: float, beta: float) -> tuple[float, int, int]:
    """Return (epsilon, threshold_yes, threshold_no) of the seeds' alpha/beta form.

    Computed from the exact binary values of the floats: in float arithmetic
    alpha + (1−alpha)·beta rounds to 1 when alpha is within an ulp of 1 (and
    (1−alpha)·beta can underflow to 0), which made a threshold 0 or 2^32 and divided by 0.
    """
    a, b = Fraction(alpha), Fraction(beta)
    p11, p10 = a + (1 - a) * b, (1 - a) * b
    epsilon = max(_log(p11 / p10), _log((1 - p10) / (1 - p11)))
    threshold_no = math.ceil(p10 * SCALE)  # P(1|0) rounded up, P(1|1) down: towards privacy
    threshold_yes = SCALE - math.ceil((1 - p11) * SCALE)
    return epsilon, threshold_yes, threshold_no


def _log(ratio: Fraction) -> float:
    """Return ln(ratio): via the correctly rounded float when it fits, else by parts."""
    try:
        return math.log(float(ratio))
    except OverflowError:
        return math.log(ratio.numerator) - math.log(ratio.denominator)
