"""What a local randomizer offers to a shuffle: the clone reductions the accountant sums.

n reports of an ε₀-LDP randomizer, shuffled so that nobody can link a report to its sender,
are (ε, δ)-DP towards whoever sees the shuffled batch. Every bound used here reduces the
batch to a victim and n − 1 others and counts outcomes in three classes (Feldman, McMillan,
Talwar, "Stronger privacy amplification by shuffling for Rényi and approximate
differential privacy", SODA 2023, arXiv 2208.04591; Wang et al., "Privacy amplification
via shuffling: unified, simplified, and tightened", arXiv 2304.05007):

- each other report is a *clone* of the victim's report on input 0 with probability r, on
  input 1 with probability r, and uninformative ("blanket") otherwise;
- the victim's report lands in class 0 with probability p·α, in class 1 with α and in the
  blanket with γ = 1 − α − p·α under input 0 (classes 0 and 1 swapped under input 1).

A randomizer with the variation-ratio property (p, β, q) — likelihood ratio between two inputs ≤ p,
total variation ≤ β, ratio to any third input ≤ q — has α = β/(p − 1) and r = α·p/q (Wang et al.,
Theorem 4.1). A generic ε₀-LDP randomizer has p = q = e^ε₀ and β = (e^ε₀ − 1)/(e^ε₀ + 1): the
"stronger clone" α = r = 1/(e^ε₀ + 1). The 2021 clone bound (Feldman et al., FOCS 2021) has r =
e^−ε₀/2. Mechanisms state (p, β, q) from the probabilities they implement (``variation_ratio()``);
this module has no IO and no scipy, so the SDK can import the mechanisms;
:mod:`ldp_telemetry.shared.shuffling.accountant` does the sums.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from ldp_telemetry.shared.mechanisms.features import stated_variation_ratio


@dataclass(frozen=True)
class Reduction:
    """A clone reduction: the victim's ratio ``p``, its class weight ``alpha``, and the
    probability ``r`` that another report is a clone of the victim on one given input."""

    p: float
    alpha: float
    r: float
    name: str
    # The ε₀ the reduction was made from, when given: ln(exp(ε₀)) can come back one ulp
    # above ε₀, and the central ε must never be published above the local one.
    given_epsilon0: float | None = None

    def __post_init__(self) -> None:
        if not self.p > 1.0:
            raise ValueError(f"p must exceed 1 (an epsilon above 0), got {self.p}")
        if not 0.0 < self.alpha <= 1.0 / (1.0 + self.p) * (1 + 1e-12):
            raise ValueError(f"alpha must lie in (0, 1/(1+p)], got {self.alpha}")
        if not 0.0 < self.r <= 0.5:
            raise ValueError(f"r must lie in (0, 1/2], got {self.r}")

    @property
    def epsilon0(self) -> float:
        """Return the local epsilon, ln p (or the ε₀ given): no shuffle makes a report
        worse than that."""
        return math.log(self.p) if self.given_epsilon0 is None else self.given_epsilon0

    @property
    def blanket(self) -> float:
        """Return γ = 1 − α − p·α, the victim's weight outside both clone classes."""
        return max(0.0, 1.0 - self.alpha * (1.0 + self.p))


@dataclass(frozen=True)
class VariationRatio:
    """A randomizer's variation-ratio parameters (Wang et al. 2023, Definition 4.1)."""

    p: float
    beta: float
    q: float

    def reduction(self) -> Reduction:
        """Return the clone reduction these parameters give (Wang et al., Theorem 4.1)."""
        alpha = self.beta / (self.p - 1.0)
        return Reduction(self.p, alpha, alpha * self.p / self.q, "variation_ratio")


def generic(epsilon0: float) -> VariationRatio:
    """Return the parameters every ε₀-LDP randomizer has."""
    e = math.exp(epsilon0)
    return VariationRatio(e, (e - 1.0) / (e + 1.0), e)


def stronger_clone(epsilon0: float) -> Reduction:
    """Return the 2023 "stronger clone" reduction of an ε₀-LDP randomizer."""
    e = math.exp(epsilon0)
    return Reduction(e, 1.0 / (e + 1.0), 1.0 / (e + 1.0), "stronger_clone", epsilon0)


def clone_2021(epsilon0: float) -> Reduction:
    """Return the 2021 clone reduction (Apple's ml-shuffling-amplification computes it)."""
    e = math.exp(epsilon0)
    return Reduction(e, 1.0 / (e + 1.0), 0.5 / e, "clone_2021", epsilon0)


def binary_flip(keep: float, flip: float, share: float = 1.0) -> VariationRatio:
    """Return the parameters of a report that differs between two inputs in one binary
    outcome, kept with probability ``keep`` and flipped with ``flip``, on a ``share`` of
    its outputs (the rest distributed alike): e.g. randomized response, GRR, OLH, HCMS.
    """
    return VariationRatio(keep / flip, share * (keep - flip), keep / flip)


def two_flips(flip: float) -> VariationRatio:
    """Return the parameters of a bit vector whose two inputs differ in two coordinates,
    each flipped with probability ``flip`` (count-mean sketch): p = ((1−f)/f)², β = 1 − 2f."""
    ratio = ((1.0 - flip) / flip) ** 2
    return VariationRatio(ratio, 1.0 - 2.0 * flip, ratio)


def reduction_of(mechanism: Any) -> Reduction:
    """Return the tightest reduction a built mechanism supports.

    A mechanism that states ``variation_ratio()`` gets Wang et al.'s mechanism-aware
    reduction; any other gets the generic one at its effective epsilon.
    """
    stated: VariationRatio | None = stated_variation_ratio(mechanism)
    local = float(mechanism.effective_epsilon)
    reduction = (generic(local) if stated is None else stated).reduction()
    # ln of the float ratio can round above the task's ε: the cap is the task's own
    return replace(reduction, given_epsilon0=min(reduction.epsilon0, local))
