"""Compare two estimates of the same values: differences, intervals, p-values, Holm.

Symbols: ``a`` and ``b`` estimate one quantity (a value's share, a mean, a percentile) in two
populations — two slices, or two periods — with standard errors s_a and s_b; d = a − b;
z = d / SE(d); the two-sided p-value is P(|Z| ≥ |z|) = erfc(|z|/√2) for a standard normal Z
(the normal approximation every interval of this project already uses). ``m`` differences
are tested at once with family-wise error α.

The standard error of a difference. Var(a − b) = s_a² + s_b² − 2·Cov(a, b), and every
estimator compared here is linear in the reports (a percentile's refits aside, below):

- **Two slices**: different devices, each report's noise drawn on its own device, so
  Cov = 0 and SE(d) = √(s_a² + s_b²) exactly (docs/breakdowns.md).
- **Two periods of a longitudinal task** share devices' permanent responses (RAPPOR's
  layer, :mod:`ldp_telemetry.shared.mechanisms.longitudinal`): two reports of one device
  about one value have Cov = Var(E[X | PRR]) ≥ 0, and reports about different values are
  independent. Summed over every pair, Cov(a, b) ≥ 0 whatever the devices report (a
  device that moves between slices mid-range is the same case). The covariance is not in
  the sums, but its sign is known: it can only narrow the difference, so √(s_a² + s_b²) is
  an upper bound of SE(d). Intervals are then conservative (wider than needed, never
  narrower) and p-values too large, never too small. The Cauchy–Schwarz bound
  s_a + s_b, valid for a covariance of either sign, would be up to √2 wider for nothing.
- **Fresh reports** (tasks without the layer) in two periods: noise drawn per report, so
  the estimates are independent even for the same devices.

Holm's step-down (Holm, Scand. J. Statist. 1979): sort the m p-values; the i-th smallest
(i = 1..m) is significant while p_(j) ≤ α/(m − j + 1) for every j ≤ i. Equivalently its
adjusted p-value max_{j ≤ i} min(1, (m − j + 1)·p_(j)) is ≤ α. The family-wise error (the
chance of any false "significant") is at most α whatever the dependence between tests.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass

from ldp_telemetry.shared.estimates import DEFAULT_LEVEL, z_value

DEFAULT_ALPHA = 1.0 - DEFAULT_LEVEL


class Covariance(enum.Enum):
    """What is known of Cov(a, b), and so why √(s_a² + s_b²) bounds SE(a − b)."""

    INDEPENDENT = "independent"
    NON_NEGATIVE = "non_negative"

    @property
    def explanation(self) -> str:
        """Return the sentence an answer gives for its standard errors."""
        if self is Covariance.INDEPENDENT:
            return (
                "the two estimates are independent (different devices, or noise drawn "
                "afresh for every report): SE = sqrt(SE_a^2 + SE_b^2) exactly"
            )
        return (
            "the two sides may share devices' permanent responses (two periods, or a device "
            "that changed slice), which can only correlate the estimates positively; the "
            "covariance is not in the sums but its sign is known: SE = sqrt(SE_a^2 + SE_b^2) "
            "is an upper bound, intervals and p-values are conservative"
        )


@dataclass(frozen=True)
class Difference:
    """a − b with its standard error, interval at ``level`` and two-sided p-value."""

    difference: float
    std_error: float
    ci_low: float
    ci_high: float
    p_value: float


def difference(
    a: float, se_a: float, b: float, se_b: float, level: float = DEFAULT_LEVEL
) -> Difference:
    """Return a − b, SE = √(se_a² + se_b²), its normal interval at ``level`` and p-value.

    Valid when Cov(a, b) ≥ 0 (see the module's docstring for when that holds).
    """
    if se_a < 0 or se_b < 0 or not (math.isfinite(se_a) and math.isfinite(se_b)):
        raise ValueError(f"standard errors must be finite and >= 0, got {se_a}, {se_b}")
    d = a - b
    se = math.hypot(se_a, se_b)
    half = z_value(level) * se
    return Difference(d, se, d - half, d + half, two_sided_p(d, se))


def two_sided_p(d: float, std_error: float) -> float:
    """Return P(|Z| ≥ |d| / std_error) for a standard normal Z (1 when d = 0).

    erfc keeps its relative precision far in the tail, where 1 − Φ(|z|) would round to 0.
    """
    if d == 0.0:
        return 1.0
    if std_error == 0.0:
        return 0.0
    return math.erfc(abs(d) / std_error / math.sqrt(2.0))


def holm_adjusted(p_values: Sequence[float]) -> list[float]:
    """Return Holm's adjusted p-values, in the order given.

    The i-th smallest p-value becomes max_{j ≤ i} min(1, (m − j + 1)·p_(j)); a difference is
    significant at family-wise error α when its adjusted p-value is ≤ α.
    """
    for p in p_values:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p-values lie in [0, 1], got {p}")
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def holm_significant(p_values: Sequence[float], alpha: float = DEFAULT_ALPHA) -> list[bool]:
    """Return, in the order given, which p-values Holm's step-down rejects at ``alpha``."""
    _check_alpha(alpha)
    return [p <= alpha for p in holm_adjusted(p_values)]


def _check_alpha(alpha: float) -> None:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")


@dataclass(frozen=True)
class Side:
    """One population's estimate of one value; ``doubt`` says why its interval cannot be
    trusted (a numeric percentile's, e.g.), None when it can."""

    estimate: float
    std_error: float
    doubt: str | None = None


@dataclass(frozen=True)
class Compared:
    """One value's difference, and whether it stays significant after Holm's correction.

    ``untested``: why the value has no p-value (an interval that cannot be trusted); such a
    value is not in Holm's family and is never significant.
    """

    value: object
    difference: Difference
    adjusted_p: float | None
    significant: bool
    untested: str | None = None


def compare_values(
    values: Sequence[object],
    a: Sequence[Side],
    b: Sequence[Side],
    *,
    level: float = DEFAULT_LEVEL,
    alpha: float = DEFAULT_ALPHA,
) -> list[Compared]:
    """Return each value's a − b with Holm's step-down over the values that can be tested."""
    if not len(values) == len(a) == len(b):
        raise ValueError("one estimate per value on each side")
    _check_alpha(alpha)
    differences = [
        difference(x.estimate, x.std_error, y.estimate, y.std_error, level)
        for x, y in zip(a, b, strict=True)
    ]
    doubts = [x.doubt or y.doubt for x, y in zip(a, b, strict=True)]
    tested = [i for i, doubt in enumerate(doubts) if doubt is None]
    adjusted = dict(
        zip(tested, holm_adjusted([differences[i].p_value for i in tested]), strict=True)
    )
    return [
        Compared(
            value,
            differences[i],
            adjusted.get(i),
            i in adjusted and adjusted[i] <= alpha,
            None if doubts[i] is None else f"not tested: {doubts[i]}",
        )
        for i, value in enumerate(values)
    ]
