"""Central (ε, δ) of n shuffled reports: the clone reductions of
:mod:`ldp_telemetry.shared.shuffling.amplification` summed exactly with binomial tails, and ε found
by bisection.

Symbols (Feldman, McMillan, Talwar 2023, §3; Wang et al. 2023, §4): besides the victim,
C ~ Bin(n − 1, 2r) clones, A ~ Bin(C, ½) of them in class 0. A shuffled batch shows the
counts (a, b) of classes 0 and 1 (the blanket holds the rest). With M the others'
multinomial, P(a, b) = p·α·M(a − 1, b) + α·M(a, b − 1) + γ·M(a, b) and Q with p·α and α
swapped, so P > e^ε·Q is a half-plane in (a, b): for c counted reports a > t(c),

    t(c) = [α(e^ε·p − 1)·c + γ(e^ε − 1)(n − c)·r/(1 − 2r)] / [α(p − 1)(1 + e^ε)].

δ(ε) = Σ_(a,b) (P − e^ε·Q)⁺ is then, per number of clones c, a weighted sum of three
binomial survival functions (victim in class 0, class 1, blanket), summed over c within
mean ± (10 sd + 10) of Bin(n − 1, 2r) — the mass outside (below 10⁻²⁰) is added whole,
which only errs towards privacy. The least ε with δ(ε) ≤ δ comes from a root search on
[0, ε₀]; the result is never above ε₀, which the reduction grants without any shuffle.

scipy is needed at run time (exact binomial tails over 10⁴ values of c per step): the
collector and the simulations import this module; the SDK never does.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq
from scipy.stats import binom

from ldp_telemetry.shared.shuffling.amplification import Reduction

SPREAD = 10.0  # Bin(n − 1, 2r) summed over mean ± (SPREAD sd + SPREAD); the rest counts whole
RTOL = 1e-6  # relative tolerance of ε (the answer is rounded up by it)


def delta(reduction: Reduction, n: int, epsilon: float) -> float:
    """Return δ(ε) of n shuffled reports under ``reduction`` (an upper bound, exact up to
    float rounding and the Bin(n − 1, 2r) mass left out, which it counts whole)."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    p, alpha, r, gamma = reduction.p, reduction.alpha, reduction.r, reduction.blanket
    others, clone = n - 1, min(1.0, 2.0 * r)
    c, weights, tail = _clone_counts(others, clone)
    e = math.exp(epsilon)
    denominator = alpha * (p - 1.0) * (1.0 + e)

    def threshold(counted: np.ndarray) -> np.ndarray:
        """Return t(c): class-0 counts above it are where P exceeds e^ε·Q."""
        t = alpha * (e * p - 1.0) * counted
        if gamma > 0.0:
            t = t + gamma * (e - 1.0) * (n - counted) * r / (1.0 - 2.0 * r)
        return t / denominator

    cut = np.floor(threshold(c + 1.0))  # the victim counted in class 0 or 1
    in_one = binom.sf(cut, c, 0.5)  # P(A > t): slow near the mean, so taken once
    in_zero = in_one + binom.pmf(cut, c, 0.5)  # P(A + 1 > t)
    hockey = (p * alpha - e * alpha) * in_zero + (alpha - e * p * alpha) * in_one
    if gamma > 0.0:
        in_blanket = binom.sf(np.floor(threshold(c.astype(float))), c, 0.5)
        hockey = hockey + gamma * (1.0 - e) * in_blanket
    return float(np.dot(weights, hockey)) + tail


def _clone_counts(others: int, clone: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Return the clone counts c summed exactly, their Bin(others, clone) weights, and
    the probability mass left outside (exact, tiny: ``SPREAD`` sd and ``SPREAD`` more)."""
    mean = others * clone
    reach = SPREAD * math.sqrt(others * clone * (1.0 - clone)) + SPREAD
    low, high = max(0, math.floor(mean - reach)), min(others, math.ceil(mean + reach))
    c = np.arange(low, high + 1, dtype=np.int64)
    weights = binom.pmf(c, others, clone)
    tail = float(binom.cdf(low - 1, others, clone) + binom.sf(high, others, clone))
    return c, weights, tail


def central_epsilon(reduction: Reduction, n: int, target_delta: float) -> float:
    """Return the least ε (rounded up, to a relative 10⁻⁶) with δ(ε) ≤ ``target_delta``;
    never more than ε₀.

    The bracket comes from halving ε₀ until δ exceeds the target (evaluations far from the
    answer are cheap), then Brent's method; the root is rounded up by its tolerance, so
    the ε returned always has δ(ε) ≤ target (δ falls as ε grows).
    """
    if not 0.0 < target_delta < 1.0:
        raise ValueError(f"delta must lie in (0, 1), got {target_delta}")

    def excess(epsilon: float) -> float:
        return delta(reduction, n, epsilon) - target_delta

    high = reduction.epsilon0
    if excess(high) > 0.0:  # only float rounding can put δ(ε₀) above 0
        return high
    low = high / 2.0
    while excess(low) <= 0.0:
        if low < 1e-12:
            return low
        high, low = low, low / 2.0
    root = float(brentq(excess, low, high, xtol=1e-12, rtol=RTOL))
    return min(reduction.epsilon0, root * (1.0 + 2.0 * RTOL) + 1e-12)
