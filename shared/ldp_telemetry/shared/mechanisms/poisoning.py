"""Fake devices: how far one report can move an estimate, and the tests that notice them.

Every estimator here is linear: a candidate t's count is f̂_t = Σ_i φ_t(y_i) over the
reports y_i. A fake device chooses its report instead of drawing it, so m fake reports
move f̂_t by at most m·max_y φ_t(y) up and m·min_y φ_t(y) down (Cao, Jia, Gong, "Data
Poisoning Attacks to Local Differential Privacy Protocols", USENIX Security 2021: the
Maximal Gain Attack attains the bound). :class:`Reach` is that pair per mechanism; an
honest device holding t adds 1 in expectation, so ``reach.high`` is how many honest
devices one fake report is worth.

A report whose shape is bounded (a count-mean sketch's m bits) can be refused when its
weight is outside a band an honest device leaves with probability below
:data:`HONEST_MISS` (:func:`weight_band`); fake reports padded to an honest weight pass
it, so the collector also tests the sums it keeps: the total weight of a bucket's
reports against its honest mean (:func:`weight_test`) and the spread of reports over the
sketch's rows (:func:`rows_test`). Neither changes any privacy: they read what the
collector already holds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from statistics import NormalDist

import numpy as np

from ldp_telemetry.shared.answers import Anomaly, CheckResult, PoisoningBound

# An honest report falls outside the plausible weight band with at most this probability.
HONEST_MISS = 1e-9
# |z| above which a bucket's sums are reported as suspected (two-sided p ≈ 1.36e-5 per
# test, 6.8e-6 for the one-sided row spread: an honest cms bucket, tested both ways, is
# flagged about once in 49,000).
SUSPECT_Z = 4.35


@dataclass(frozen=True)
class Reach:
    """The least and greatest amount one report adds to one candidate's count estimate."""

    low: float
    high: float

    def shift(self, fake_reports: float) -> tuple[float, float]:
        """Return how far ``fake_reports`` chosen reports can move a count (down, up)."""
        return fake_reports * self.low, fake_reports * self.high

    def scaled(self, factor: float) -> Reach:
        """Return the reach of an estimator multiplied by ``factor`` (e.g. hh's levels)."""
        return Reach(self.low * factor, self.high * factor)


def linear_reach(hit: float, miss: float, p: float, q: float) -> Reach:
    """Return the reach of f̂ = Σ(x_i − q)/(p − q) whose report indicator x is 0 or 1.

    ``hit``/``miss``: the indicator's largest and smallest value (1 and 0 for grr/olh).
    """
    return Reach((miss - q) / (p - q), (hit - q) / (p - q))


@dataclass(frozen=True)
class WeightBand:
    """The number of 1-bits an honest m-bit report holds, but for HONEST_MISS."""

    low: int
    high: int
    mean: float
    variance: float


def weight_band(
    m: int, flip: Fraction, miss: float = HONEST_MISS, keep: Fraction | None = None
) -> WeightBand:
    """Return the plausible weight band of a report of m bits, the others set w.p. ``flip``.

    The true coordinate is 1 with probability ``keep`` (a CMS report: 1 unless flipped,
    1 − f; OUE: ½), the m − 1 others are 1 only if flipped:
    W = Bernoulli(keep) + Binomial(m − 1, f), computed exactly enough (log space) for
    tails of 10⁻⁹. Each tail outside [low, high] holds at most miss/2.
    """
    f = float(flip)
    kept = 1.0 - f if keep is None else float(keep)
    pmf = _binomial_pmf(m - 1, f)
    weight = np.zeros(m + 1)
    weight[:-1] += (1.0 - kept) * pmf  # the true coordinate 0
    weight[1:] += kept * pmf
    below = np.cumsum(weight)  # P(W <= w)
    above = np.cumsum(weight[::-1])[::-1]  # P(W >= w)
    low = int(np.searchsorted(below, miss / 2, side="right"))  # P(W < low) <= miss/2
    high = int(np.nonzero(above > miss / 2)[0][-1])  # P(W > high) <= miss/2
    variance = kept * (1.0 - kept) + (m - 1) * f * (1.0 - f)
    return WeightBand(low, high, kept + (m - 1) * f, variance)


def _binomial_pmf(trials: int, p: float) -> np.ndarray:
    """Return Binomial(trials, p)'s probabilities 0..trials (log-space recurrence)."""
    k = np.arange(trials, dtype=float)
    steps = np.log(trials - k) - np.log(k + 1) + math.log(p) - math.log1p(-p)
    logs = trials * math.log1p(-p) + np.concatenate(([0.0], np.cumsum(steps)))
    return np.exp(logs)


@dataclass(frozen=True)
class Check:
    """One test of a bucket's sums: its statistic as a z-score and two-sided p-value."""

    name: str
    z: float
    p_value: float
    # A χ² test's statistic and degrees of freedom, kept so that it can be judged again
    # for reports that come several at a time from one device (:func:`repeated`).
    chi2: float | None = field(default=None, compare=False)
    df: int = field(default=0, compare=False)

    @property
    def suspected(self) -> bool:
        """Return True when |z| exceeds SUSPECT_Z."""
        return abs(self.z) > SUSPECT_Z

    def to_json(self) -> CheckResult:
        """Return the check as the estimates answer shows it."""
        return {"test": self.name, "z": round(self.z, 3), "p_value": self.p_value}


def weight_test(ones: int, n: int, band: WeightBand) -> Check:
    """Test the total 1-bits of n reports against n honest reports' mean and variance."""
    z = (ones - n * band.mean) / math.sqrt(n * band.variance) if n else 0.0
    return Check("bit_weight", z, _two_sided(z))


def rows_test(row_counts: np.ndarray) -> Check | None:
    """Test that reports spread evenly over a sketch's rows (χ², as a z-score).

    Honest devices draw their row uniformly; a χ² over k − 1 degrees of freedom is turned
    into a z-score by the Wilson–Hilferty cube root (accurate to ~10⁻³ in z for k ≥ 10).
    Only the upper side is evidence: a spread more even than chance is not an attack.
    """
    k, n = len(row_counts), int(row_counts.sum())
    if k < 2 or n == 0:
        return None
    expected = n / k
    return _chi2_check(float(((row_counts - expected) ** 2).sum() / expected), k - 1)


def _chi2_check(chi2: float, df: int) -> Check:
    """Return the row-spread check of a χ² over ``df`` degrees of freedom (upper side)."""
    shape = 2.0 / (9.0 * df)
    z = ((chi2 / df) ** (1.0 / 3.0) - (1.0 - shape)) / math.sqrt(shape)
    p_value = 0.5 * math.erfc(z / math.sqrt(2.0))
    return Check("row_spread", z if z > 0 else 0.0, p_value, chi2=chi2, df=df)


def repeated(check: Check, repeats: int, weight_share: float) -> Check:
    """Return ``check`` judged for reports that share one device's draw up to ``repeats``.

    A longitudinal device's reports about a value in ``repeats`` time buckets share its
    permanent response: its row (so a row count's variance, and the χ², grow by at most
    that factor) and its bits (each pair of reports' weights covary by ``weight_share`` of
    one report's weight variance: Var(E[W | PRR]) / Var(W)). Both corrections bound the
    variance whatever devices report, as the estimates' intervals over buckets do.
    """
    if repeats <= 1:
        return check
    if check.name == "row_spread" and check.chi2 is not None:
        return _chi2_check(check.chi2 / repeats, check.df)
    if check.name == "bit_weight":
        z = check.z / math.sqrt(1.0 + (repeats - 1) * weight_share)
        return Check(check.name, z, _two_sided(z))
    return check


def refusals_test(refused: int, n: int) -> Check:
    """Test how many reports were refused as implausible against what honest devices send.

    Each honest report is refused with probability at most HONEST_MISS, so with n
    reports counted the honest count is at most Poisson(λ = (n + refused)·HONEST_MISS);
    the p-value is P(Poisson(λ) ≥ refused) (its first term and a geometric bound on the
    rest: λ is tiny), and z the one-sided normal quantile of the same tail.
    """
    if refused == 0:
        return Check("implausible_reports", 0.0, 1.0)
    rate = (n + refused) * HONEST_MISS
    log_first = -rate + refused * math.log(rate) - math.lgamma(refused + 1)
    p_value = min(1.0, math.exp(log_first) / max(1e-12, 1.0 - rate / (refused + 1)))
    z = -NormalDist().inv_cdf(max(p_value, 1e-300)) if p_value < 1.0 else 0.0
    return Check("implausible_reports", max(z, 0.0), p_value)


def _two_sided(z: float) -> float:
    return math.erfc(abs(z) / math.sqrt(2.0))


def anomaly(checks: list[Check], refused: int, n: int) -> Anomaly:
    """Return the estimates answer's ``anomaly`` object: the sums' tests and the refusals."""
    every = [*checks, refusals_test(refused, n)]
    return {
        "suspected": any(check.suspected for check in every),
        "threshold_z": SUSPECT_Z,
        "implausible_refused": refused,
        "checks": [check.to_json() for check in every],
    }


def poisoning_bound(reach: Reach, fake_fraction: float, n: int) -> PoisoningBound:
    """Return the estimates answer's ``poisoning`` object: the worst shift of any count.

    ``fake_fraction`` β of the n reports are assumed chosen by an attacker: together they
    move every candidate's count by at most β·n·reach.high up and β·n·reach.low down.
    """
    fakes = fake_fraction * n
    down, up = reach.shift(fakes)
    return {
        "fake_fraction": fake_fraction,
        "fake_reports": fakes,
        "per_fake_report": {"low": reach.low, "high": reach.high},
        "count_shift": {"down": down + 0.0, "up": up + 0.0},  # + 0.0: no "-0.0" at β = 0
    }
