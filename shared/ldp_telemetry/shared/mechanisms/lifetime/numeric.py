"""Repeated numeric values: a permanent one-bit response per bucket, re-randomized per report.

A numeric task with ``method: "1bit"`` and ``longitudinal: {"epsilon_inf": ε∞, "epsilon_1": ε₁}``
(or ``"flip"``): the device rounds its value to one of the task's d buckets, as every numeric
task does; the permanent response of bucket i is the one-bit mean's report at ε∞ (1 with
P∞(i) = (L + i·S)/2^32, PROTOCOL.md §3.8), drawn from the HMAC-DRBG keyed by the device's task
key, the task and the bucket (§3.9: value_bytes = the bucket, 4 bytes big-endian), and each
report flips it with T_i/2^32 = t from fresh CSPRNG words. A device pays ε∞ per distinct bucket
it ever reports, never more (the privacy ledger charges it so); a value that moves within a
bucket costs nothing.

One report is 1 with P′(i) = t + (1 − 2t)·P∞(i): still linear in i, so the one-bit mean's
estimator debiases it exactly, with slope (1 − 2t)·S·d/2^32. Over B time buckets a device's
reports share its permanent bits: :meth:`Longitudinal.over_buckets` adds (B − 1) times the
permanent layer's variance (:meth:`RepeatedOneBitMean.answer_variance`).

Not α-point rounding with memoization (Ding, Kulkarni, Yekhanin, NeurIPS 2017), which Microsoft
patented (US10776242, to 2038): the device memoizes per bucket of its own value, with no
randomized rounding point.
"""

from __future__ import annotations

import copy
from fractions import Fraction
from typing import Any

import numpy as np

from ldp_telemetry.shared.contract import PROTOCOL_VERSION_1_1
from ldp_telemetry.shared.estimates import DEFAULT_LEVEL, Estimates
from ldp_telemetry.shared.mechanisms import longitudinal
from ldp_telemetry.shared.mechanisms.longitudinal import Longitudinal, LongitudinalSpec
from ldp_telemetry.shared.mechanisms.numeric import estimate as est
from ldp_telemetry.shared.mechanisms.numeric.mechanism import OneBitMean
from ldp_telemetry.shared.randomness import SCALE, Rng, log_ratio, uniform_word, uniform_words
from ldp_telemetry.shared.sums import Sums, check_shape


class RepeatedOneBitMean(OneBitMean):
    """The one-bit mean whose bit is flipped again with probability ``flip`` (0: itself)."""

    flip = Fraction(0)

    def ones(self, bucket: Any) -> Fraction:
        """Return P(report = 1 | bucket) exactly, both layers composed."""
        base = Fraction(self.one_words(bucket), SCALE)
        return self.flip + (1 - 2 * self.flip) * base

    def output_probability(self, value: float, report: int) -> Fraction:
        """Return P(report | value) exactly (0 for a report this mechanism never sends)."""
        if isinstance(report, bool) or report not in (0, 1):
            return Fraction(0)
        one = self.ones(self.bucket_of(value))
        return one if report == 1 else 1 - one

    # -- as the permanent layer of Longitudinal -------------------------------------------

    def irr_threshold(self, flip: float) -> int:
        """Return T_i flipping the bit with ``flip`` (below 1/2)."""
        return longitudinal.flip_threshold(flip, 1, self.irr_limit())

    def irr_limit(self) -> int:
        """Return the threshold of a fair coin (reports then say nothing)."""
        return SCALE // 2

    def compose_flip(self, threshold: int) -> RepeatedOneBitMean:
        """Return the mechanism one report follows: this bit flipped again with T/2^32."""
        composed = copy.copy(self)
        again = Fraction(threshold, SCALE)
        composed.flip = self.flip * (1 - again) + (1 - self.flip) * again
        low, high = composed.ones(0), composed.ones(self.d - 1)
        ratio = max(high / low, (1 - low) / (1 - high))
        composed.effective_epsilon = log_ratio(ratio.numerator, ratio.denominator)
        return composed

    def reflip(self, report: int, threshold: int, rng: Rng = None) -> int:
        """Return the bit flipped when a fresh word is below T."""
        return int(report) ^ int(uniform_word(rng) < threshold)

    def reflip_many(self, batch: np.ndarray, threshold: int, rng: Rng = None) -> np.ndarray:
        """Return each bit flipped when its own fresh word is below T."""
        return batch ^ (uniform_words(len(batch), rng) < threshold).astype(np.int64)

    def _slope(self) -> float:
        """Return d P(1) / d (mean of x in [0, 1]): (1 − 2t)·S·d/2^32."""
        return float(1 - 2 * self.flip) * self.step_words * self.d / SCALE

    def estimate(
        self, sums: Sums, candidates: Any = None, level: float = DEFAULT_LEVEL
    ) -> Estimates:
        """Estimate the mean with its closed-form standard error (both layers debiased)."""
        check_shape(sums, 1, 2, self)
        n = sums.total
        if n == 0:
            return est.nothing(["mean"], self.d, self.to_value, level)
        share = sums.table[0, 1] / n
        t = float(self.flip)
        # P(1) = t + (1 − 2t)(L + S·i)/2^32 with x = (i + ½)/d: linear, so unbiased
        base = (share - t) / (1 - 2 * t)
        unit = ((base * SCALE - self.low_words) / self.step_words + 0.5) / self.d
        span = self.hi - self.lo
        variance = share * (1 - share) / max(n - 1, 1) / self._slope() ** 2 * span**2
        mean = np.array([self.lo + unit * span])
        answer = Estimates.from_variance(["mean"], mean, np.array([variance]), n, level)
        return est.flagged(answer, [None])

    def answer_variance(self, estimates: Estimates) -> np.ndarray:
        """Return this layer's variance of the mean at the answered mean (n reports)."""
        span = self.hi - self.lo
        unit = np.clip((np.asarray(estimates.estimate, float) - self.lo) / span, 0.0, 1.0)
        bucket = unit * self.d - 0.5
        share = float(self.flip) + float(1 - 2 * self.flip) * (
            (self.low_words + bucket * self.step_words) / SCALE
        )
        n = max(estimates.n, 1)
        return np.asarray(share * (1 - share) / n / self._slope() ** 2 * span**2)


class RepeatedNumeric(Longitudinal):
    """A longitudinal one-bit mean task's layers: new in protocol 1.1 (1.0 devices refuse it)."""

    protocol = PROTOCOL_VERSION_1_1

    def over_buckets(self, estimates: Estimates, buckets: int) -> Estimates:
        """Return the pooled mean's honest interval, its reliability flags kept."""
        widened = super().over_buckets(estimates, buckets)
        reasons = getattr(estimates, "reasons", (None,) * len(widened.values))
        return est.flagged(widened, list(reasons))


def repeated_one_bit_mean(
    spec: LongitudinalSpec, lo: float, hi: float, buckets: int, identity: str
) -> Longitudinal:
    """Return a longitudinal one-bit mean task's layers."""
    permanent = RepeatedOneBitMean(
        epsilon=spec.epsilon_inf, lo=lo, hi=hi, buckets=buckets, scale="linear"
    )
    return RepeatedNumeric(permanent, spec, identity)
