"""Numeric values (latencies, sizes) on a bounded range: Square Wave or the one-bit mean.

A value v is clipped to [lo, hi], mapped to [0, 1] (through log when ``scale`` is
``log``: latencies are spread over orders of magnitude) and put in one of ``buckets``
equal buckets; the bucket is what is privatized, so the device's memo and the privacy
tests work per bucket.

- ``sw``, Square Wave (Li et al., SIGMOD 2020), discretized: the output is one of
  d + 2w indices; bucket i reports each of the 2w + 1 indices i … i + 2w with
  probability P/U and each other index with T/U, where w = round(b·d) and
  b = (εe^ε − e^ε + 1) / (2e^ε(e^ε − 1 − ε)) is the wave's optimal half-width. T is the
  smallest 32-bit threshold at least the ideal far probability, P = ⌊(2^32 − (d−1)·T) /
  (2w+1)⌋, and a word past U = (d−1)·T + (2w+1)·P (fewer than 2w+1 of 2^32) is drawn
  again: every probability is exact and ε_eff = ln(P/T) ≤ ε. The
  collector reconstructs the distribution as a log-spline density by maximum likelihood
  (:mod:`numeric_estimate`, :mod:`numeric_pspline`): mean, percentiles, histogram.
- ``1bit``, the one-bit mean (Duchi et al. 2013; Ding et al. 2017): bucket i, at centre
  x_i = (i + ½)/d, reports 1 with probability (L + i·S)/2^32, where L = ⌈2^32/(e^ε + 1)⌉
  and S = ⌊(2^32 − 2L)/(d − 1)⌋: the thresholds sit on the extreme inputs a device can
  send (the first and last buckets' centres), so H = L + (d − 1)·S ≤ 2^32 − L and
  ε_eff = ln(H/L), the worst-case ratio, spends all but under 10^-6 of ε. The mean of x
  is ((ones/n·2^32 − L)/S + ½)/d, unbiased for the mean of the buckets' centres (within
  half a bucket of the values' mean: the default buckets are the finest allowed), with a
  closed-form variance: a sample's, that of the mean of the distribution the devices'
  values are drawn from. Only the mean, on a linear scale.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from ldp_telemetry.shared.errors import ParameterError, ValueOutOfDomain
from ldp_telemetry.shared.estimates import DEFAULT_LEVEL, Estimates
from ldp_telemetry.shared.mechanisms.base import SingleRowMechanism
from ldp_telemetry.shared.mechanisms.numeric import estimate as est
from ldp_telemetry.shared.randomness import (
    SCALE,
    Rng,
    log_ratio,
    threshold_at_least,
    uniform_word,
    uniform_words,
)
from ldp_telemetry.shared.sums import Sums, check_shape
from ldp_telemetry.shared.validation import check_epsilon, check_int
from ldp_telemetry.shared.wire import integer

METHODS = ("sw", "1bit")
SCALES = ("linear", "log")
MAX_BUCKETS = 1024
# Lognormal latencies (n = 10^5, eps = 2, log scale over [5 ms, 20 s]; three sets of 10
# populations, simulations/numeric/accuracy.py): p99's mean |error| 6.4 / 8.9 / 4.4 % at 256
# buckets, 9.7 / 10.4 / 8.3 % at 128 (since the end buckets are no longer smoothed and the
# bootstrap's bias is no longer subtracted; 192: 6.8 / 9.6 %).
DEFAULT_BUCKETS = 256
# The one-bit mean is of the buckets' centres, off the values' mean by up to half a bucket
# (a point mass at a bucket's edge: 0.55 SE at n = 10^4, eps = 4 with 128 buckets). Its
# buckets cost the collector nothing (two outputs), so its default is the finest allowed.
DEFAULT_ONE_BIT_BUCKETS = MAX_BUCKETS


class NumericSums(Sums):
    """n reports and, per output index, how many reports named it."""

    def __init__(self, width: int) -> None:
        super().__init__(1, width)

    def add(self, report: int) -> None:
        """Add one report (an output index)."""
        self.n[0] += 1
        self.table[0, report] += 1

    def add_many(self, reports: np.ndarray) -> None:
        """Add an array of output indices."""
        self.n[0] += len(reports)
        self.table[0] += np.bincount(reports, minlength=self.table.shape[1])


class NumericBase(SingleRowMechanism):
    """The range, the buckets and everything but the randomizer and its estimator."""

    name = "numeric"
    payload_fields = ("index",)
    outputs: int
    effective_epsilon: float
    sums_shape: tuple[int, int]

    def __init__(self, *, epsilon: float, lo: float, hi: float, buckets: int, scale: str) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.lo, self.hi, self.scale = float(lo), float(hi), scale
        self.d = check_int("buckets", buckets, 2, MAX_BUCKETS)
        self._low, self._high = self._forward(self.lo), self._forward(self.hi)

    def _forward(self, value: float) -> float:
        return math.log(value) if self.scale == "log" else value

    def to_value(self, unit: np.ndarray) -> np.ndarray:
        """Return the task's values at points of [0, 1] (the inverse of the bucketing map)."""
        mapped = self._low + np.asarray(unit, dtype=float) * (self._high - self._low)
        return np.exp(mapped) if self.scale == "log" else mapped

    def bucket_of(self, value: object) -> int:
        """Return the bucket of a value (clipped to the range), or raise ValueOutOfDomain."""
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValueOutOfDomain(f"a numeric task takes numbers, got {type(value).__name__}")
        number = float(value)
        if math.isnan(number):
            raise ValueOutOfDomain("a numeric task cannot record NaN")
        clipped = min(max(number, self.lo), self.hi)
        unit = (self._forward(clipped) - self._low) / (self._high - self._low)
        return min(int(unit * self.d), self.d - 1)

    def buckets_of(self, values: Sequence[float] | np.ndarray) -> np.ndarray:
        """Return the buckets of many values (int64), vectorized for numeric arrays."""
        array = np.asarray(values)
        if array.ndim != 1 or array.dtype.kind not in "iuf" or np.isnan(array).any():
            # anything else (strings, bools, NaN) goes value by value and is refused there
            return np.fromiter(
                (self.bucket_of(v) for v in values), dtype=np.int64, count=len(values)
            )
        clipped = np.clip(array.astype(float), self.lo, self.hi)
        mapped = np.log(clipped) if self.scale == "log" else clipped
        unit = (mapped - self._low) / (self._high - self._low)
        return np.minimum((unit * self.d).astype(np.int64), self.d - 1)

    def canonical(self, value: object) -> bytes:
        """Return the value's bucket as 4 bytes: what the device's memo keys on."""
        return self.bucket_of(value).to_bytes(4, "big")

    def encode_payload(self, report: int) -> dict[str, Any]:
        """Return the report's JSON field."""
        return {"index": int(report)}

    def decode_payload(self, obj: Mapping[str, Any]) -> int:
        """Return the output index a JSON report holds, or raise DecodeError."""
        return integer(obj, "index", 0, self.outputs - 1)

    def stack(self, reports: Sequence[int]) -> np.ndarray:
        """Return decoded reports as the int64 batch ``add_many`` takes."""
        return np.fromiter(reports, dtype=np.int64, count=len(reports))

    def new_sums(self) -> NumericSums:
        """Return an empty accumulator."""
        return NumericSums(self.outputs)

    def privatize_many(self, values: Sequence[float] | np.ndarray, rng: Rng = None) -> np.ndarray:
        """Return the privatized reports of many values (int64)."""
        truth = self.buckets_of(values)
        return self._from_words(truth, uniform_words(len(truth), rng).astype(np.int64))

    def privatize(self, value: float, rng: Rng = None) -> int:
        """Return the privatized report of one value."""
        truth = np.array([self.bucket_of(value)], dtype=np.int64)
        return int(self._from_words(truth, np.array([uniform_word(rng)], dtype=np.int64))[0])

    def _from_words(self, truth: np.ndarray, words: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def derived(self) -> dict[str, Any]:
        """Return the integers a device uses (each method defines them)."""
        raise NotImplementedError

    def output_probability(self, value: float, report: int) -> Fraction:
        """Return P(report | value) exactly (each method defines it)."""
        raise NotImplementedError

    def parse_candidates(self, raw: Any) -> list[str] | None:
        """Return the statistics a query asks (each method defines which it answers)."""
        raise NotImplementedError

    def estimate(
        self, sums: Sums, candidates: Sequence[str] | None = None, level: float = DEFAULT_LEVEL
    ) -> Estimates:
        """Estimate the statistics asked (each method defines it)."""
        raise NotImplementedError


class SquareWave(NumericBase):
    """Square Wave over ``buckets`` input buckets, d + 2w outputs, reconstructed as a log-spline."""

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        e = math.exp(self.epsilon)
        half = (self.epsilon * e - e + 1) / (2 * e * (e - 1 - self.epsilon))
        self.w = max(0, round(half * self.d))
        near, self.outputs = 2 * self.w + 1, self.d + 2 * self.w
        far = self.outputs - near
        self.far_words = threshold_at_least(1.0 / (near * e + far))
        self.near_words = (SCALE - far * self.far_words) // near
        if self.near_words <= self.far_words:
            raise ParameterError("epsilon is too small to implement with 32-bit thresholds")
        # Words past far·T + near·P (fewer than 2w + 1 of 2^32) are redrawn, so every
        # output has exactly T or P words out of the USED words that remain.
        self._lie_words = far * self.far_words
        self.used_words = self._lie_words + near * self.near_words
        self.effective_epsilon = log_ratio(self.near_words, self.far_words)
        self.channel = est.Channel(
            self.d, near, self.near_words / self.used_words, self.far_words / self.used_words
        )
        self.sums_shape = (1, self.outputs)

    def __repr__(self) -> str:
        return f"SquareWave(epsilon={self.epsilon!r}, d={self.d}, w={self.w})"

    def derived(self) -> dict[str, Any]:
        """Return the integers a device uses (published in the task JSON, PROTOCOL.md §3.8)."""
        return {"w": self.w, "T": self.far_words, "P": self.near_words, "U": self.used_words}

    def _redraw(self, words: np.ndarray, rng: Rng) -> np.ndarray:
        """Replace the words past ``used_words`` by fresh ones until none is left."""
        while True:
            spare = np.flatnonzero(words >= self.used_words)
            if not len(spare):
                return words
            words[spare] = uniform_words(len(spare), rng).astype(np.int64)

    def privatize_many(self, values: Sequence[float] | np.ndarray, rng: Rng = None) -> np.ndarray:
        """Return the privatized reports of many values (int64)."""
        truth = self.buckets_of(values)
        words = self._redraw(uniform_words(len(truth), rng).astype(np.int64), rng)
        return self._from_words(truth, words)

    def privatize(self, value: float, rng: Rng = None) -> int:
        """Return the privatized report of one value."""
        truth = np.array([self.bucket_of(value)], dtype=np.int64)
        words = self._redraw(np.array([uniform_word(rng)], dtype=np.int64), rng)
        return int(self._from_words(truth, words)[0])

    def _from_words(self, truth: np.ndarray, words: np.ndarray) -> np.ndarray:
        far = words // self.far_words  # the far outputs, skipping the window [i, i + 2w]
        far = far + (far >= truth) * (2 * self.w + 1)
        near = truth + (words - self._lie_words) // self.near_words
        return np.where(words < self._lie_words, far, near)

    def output_probability(self, value: float, report: int) -> Fraction:
        """Return P(report | value) exactly (0 for a report this mechanism never sends)."""
        truth = self.bucket_of(value)
        if isinstance(report, bool) or report not in range(self.outputs):
            return Fraction(0)
        near = truth <= report <= truth + 2 * self.w
        return Fraction(self.near_words if near else self.far_words, self.used_words)

    def parse_candidates(self, raw: Any) -> list[str] | None:
        """Return the statistics asked (None: mean, percentiles, clipped shares)."""
        return est.parse_query(raw, percentiles_only_from_distribution=True)

    def estimate(
        self, sums: Sums, candidates: Sequence[str] | None = None, level: float = DEFAULT_LEVEL
    ) -> Estimates:
        """Reconstruct the distribution (a log-spline); answer each statistic with its SE.

        The linear mean and the end buckets' shares are unbiased in closed form; the rest
        come from the fit with bootstrap SEs, flagged unreliable when the fit biases them.
        """
        check_shape(sums, 1, self.outputs, self)
        names = list(est.DEFAULT_QUERY if candidates is None else candidates)
        if sums.total == 0:  # nothing to reconstruct (the collector refuses below min_batch_size)
            return est.nothing(names, self.d, self.to_value, level)
        return est.answer(
            self.channel, sums.table[0], names, self.to_value, self.scale == "linear", level
        )

    def estimate_rows(
        self,
        many: Sequence[Sums],
        candidates: Sequence[str] | None = None,
        level: float = DEFAULT_LEVEL,
    ) -> list[Estimates]:
        """Return each of a breakdown's rows' estimates: the fit of :meth:`estimate`, its
        bootstrap refits the same searches run side by side (:mod:`held`), the EMS screens
        of all rows in one EM."""
        for sums in many:
            check_shape(sums, 1, self.outputs, self)
        names = list(est.DEFAULT_QUERY if candidates is None else candidates)
        counted = [sums.table[0] for sums in many if sums.total]
        linear = self.scale == "linear"
        found = iter(est.answer_rows(self.channel, counted, names, self.to_value, linear, level))
        return [
            next(found) if sums.total else est.nothing(names, self.d, self.to_value, level)
            for sums in many
        ]


class OneBitMean(NumericBase):
    """The one-bit mean: a biased coin per report, the mean debiased in closed form."""

    outputs = 2

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        if self.scale != "linear":
            raise ParameterError("method 1bit estimates the mean of the values: use scale linear")
        # The first and last buckets are the extreme inputs: their thresholds L and H span
        # the whole ratio (the old ones sat at x = 0 and 1 and left part of ε unspent).
        self.low_words = threshold_at_least(1.0 / (math.exp(self.epsilon) + 1))
        self.step_words = (SCALE - 2 * self.low_words) // (self.d - 1)
        if self.step_words < 1:
            raise ParameterError("epsilon is too small to implement with 32-bit thresholds")
        # H ≤ 2^32 − L, so P(1|last)/P(1|first) = H/L is the worst ratio (the 0s' is smaller)
        self.high_words = self.low_words + (self.d - 1) * self.step_words
        self.effective_epsilon = log_ratio(self.high_words, self.low_words)
        self.sums_shape = (1, 2)

    def __repr__(self) -> str:
        return f"OneBitMean(epsilon={self.epsilon!r}, d={self.d})"

    def derived(self) -> dict[str, Any]:
        """Return the integers a device uses (published in the task JSON, PROTOCOL.md §3.8)."""
        return {"L": self.low_words, "S": self.step_words}

    def one_words(self, bucket: Any) -> Any:
        """Return the words (out of 2^32) for which bucket reports 1."""
        return self.low_words + bucket * self.step_words

    def _from_words(self, truth: np.ndarray, words: np.ndarray) -> np.ndarray:
        return (words < self.one_words(truth)).astype(np.int64)

    def output_probability(self, value: float, report: int) -> Fraction:
        """Return P(report | value) exactly (0 for a report this mechanism never sends)."""
        ones = self.one_words(self.bucket_of(value))
        if isinstance(report, bool) or report not in (0, 1):
            return Fraction(0)
        return Fraction(ones if report == 1 else SCALE - ones, SCALE)

    def parse_candidates(self, raw: Any) -> list[str] | None:
        """Return the statistics asked: the mean only."""
        return est.parse_query(raw, percentiles_only_from_distribution=False)

    def estimate(
        self, sums: Sums, candidates: Sequence[str] | None = None, level: float = DEFAULT_LEVEL
    ) -> Estimates:
        """Estimate the mean with its closed-form standard error."""
        check_shape(sums, 1, 2, self)
        n = sums.total
        if n == 0:
            return est.nothing(["mean"], self.d, self.to_value, level)
        # E[ones/n] = (L + S·E[i])/2^32 and x = (i + ½)/d: linear, so unbiased
        slope = self.step_words * self.d / SCALE  # d(ones/n) / d(mean of x)
        share = sums.table[0, 1] / n
        unit = ((share * SCALE - self.low_words) / self.step_words + 0.5) / self.d
        span = self.hi - self.lo
        mean = self.lo + unit * span
        variance = share * (1 - share) / max(n - 1, 1) / slope**2 * span**2
        base = Estimates.from_variance(["mean"], np.array([mean]), np.array([variance]), n, level)
        return est.flagged(base, [None])
