"""A device's central (ε, δ) over the shuffled batches it reported in: composition.

Each shuffled batch gives every device in it an (εᵢ, δᵢ) pair
(:mod:`ldp_telemetry.shared.shuffling.accountant`); a device that reports in k batches (one a
day, say) is protected by their composition. All that is used of a batch is its pair, not
its full privacy profile, so each batch is composed as the worst mechanism that pair allows:
the randomized-response pair whose privacy loss is +εᵢ with probability (1 − δᵢ)·e^εᵢ/(1 + e^εᵢ),
−εᵢ with (1 − δᵢ)/(1 + e^εᵢ), and ∞ with δᵢ. Every (εᵢ, δᵢ)-DP mechanism is dominated by it
(Kairouz, Oh, Viswanath, "The composition theorem for differential privacy", ICML 2015,
Theorem 2.1), so composing these pairs is the optimal composition of the pairs: no tighter
bound follows from the pairs alone.

- :func:`pld_epsilon`: the privacy-loss-distribution (PLD) accountant of Google's
  ``dp-accounting`` (``from_privacy_parameters`` builds exactly that pair; Koskela et al.'s
  FFT composition), each εᵢ first rounded *up* to a multiple of a step h (pessimistic: the
  answer is never below the exact composition of the rounded pairs, which dominate the
  given ones) so that the batches fall in few groups composed by ``self_compose``.
- :func:`optimal_homogeneous_delta` / :func:`optimal_homogeneous_epsilon`: the same
  composition in closed form when every batch has one pair (Kairouz et al., Theorem 3.3;
  Murtagh and Vadhan 2016): δ(ε') = 1 − (1 − δ)^k + (1 − δ)^k·Σₗ C(k, l)·
  (e^{(k−l)ε} − e^{ε'}·e^{lε})⁺ / (1 + e^ε)^k — the independent check of the PLD, and a
  bound :func:`compose` also takes at the largest pair (exact when all pairs are one).
- :func:`advanced`: Dwork, Rothblum and Vadhan's advanced composition (FOCS 2010), for
  comparison: ε' = √(2k·ln(1/δ'))·ε + k·ε·(e^ε − 1) at δ = k·δ₀ + δ'.

The composed pair is published at δ = 2·Σδᵢ: the batches' own δ's and as much again for the
composition (:func:`lifetime_delta`), where the naive sum (Σεᵢ, Σδᵢ) also holds; the answer
is the least of the three bounds that hold there (PLD, closed form at the largest pair, naive
sum).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

# The PLD's grid h: the larger of min εᵢ / PER_BATCH (rounding up raises no batch's ε by more
# than 0.1%) and Σεᵢ / SPAN (at most 2·SPAN points: 0.1–0.6 s for a year of daily batches).
PER_BATCH = 1_000
SPAN = 250_000


def lifetime_delta(deltas: Sequence[float]) -> float:
    """Return the δ a composition of batches with ``deltas`` is published at: 2·Σδᵢ."""
    return 2.0 * math.fsum(deltas)


def compose(pairs: Sequence[tuple[float, float]], target_delta: float) -> float:
    """Return the least ε (an upper bound) of the composition of the (εᵢ, δᵢ) ``pairs`` at
    ``target_delta``: the least of the bounds that hold there.

    Batches that share one pair get the exact closed form; others dp-accounting's PLD
    (:func:`pld_epsilon`), or the closed form at their largest pair when that is lower (every
    pair is also an (ε_max, δ_max) pair); never above Σεᵢ when Σδᵢ ≤ ``target_delta``.
    """
    if not pairs:
        raise ValueError("nothing to compose")
    worst = max(epsilon for epsilon, _ in pairs), max(delta for _, delta in pairs)
    if len(pairs) == 1 and worst[1] <= target_delta:
        return worst[0]
    composed = optimal_homogeneous_epsilon(*worst, len(pairs), target_delta)
    if len(set(pairs)) > 1:
        composed = min(composed, pld_epsilon(pairs, target_delta))
    if math.fsum(delta for _, delta in pairs) <= target_delta:
        return min(composed, math.fsum(epsilon for epsilon, _ in pairs))
    return composed


def pld_epsilon(pairs: Sequence[tuple[float, float]], target_delta: float) -> float:
    """Return dp-accounting's ε at ``target_delta`` for the PLDs of the ``pairs``' worst
    mechanisms composed, each εᵢ rounded up to the grid (pessimistic: never below the exact
    composition; up to 0.5% above it, measured against the closed form)."""
    from dp_accounting.pld import common, privacy_loss_distribution  # the collector's only

    naive = math.fsum(epsilon for epsilon, _ in pairs)
    step = max(min(epsilon for epsilon, _ in pairs) / PER_BATCH, naive / SPAN)
    groups = Counter((_steps_above(epsilon, step), delta) for epsilon, delta in pairs)
    total = None
    for (steps, delta), count in sorted(groups.items()):
        one = privacy_loss_distribution.from_privacy_parameters(
            common.DifferentialPrivacyParameters(steps * step, delta),
            value_discretization_interval=step,
        )
        many = one.self_compose(count) if count > 1 else one
        total = many if total is None else total.compose(many)
    assert total is not None
    return float(total.get_epsilon_for_delta(target_delta))


def _steps_above(epsilon: float, step: float) -> int:
    """Return the least whole number of steps whose float product is at least ``epsilon``
    (an ε on the grid keeps both of its losses, ±ε, exact; off it, ±ε would round apart)."""
    steps = math.ceil(epsilon / step)
    while steps * step < epsilon:
        steps += 1
    return steps


def optimal_homogeneous_delta(epsilon: float, delta: float, k: int, total: float) -> float:
    """Return the exact δ at ε' = ``total`` of k compositions of one (ε, δ) pair."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    kept = math.exp(k * math.log1p(-delta))  # (1 − δ)^k, and 1 − it, without cancellation
    log_norm = k * math.log1p(math.exp(epsilon))
    hockey = 0.0
    for low in range(k + 1):  # l of the k losses are −ε, the rest +ε
        gap = (k - 2 * low) * epsilon - total
        if gap <= 0.0:
            break
        log_choose = math.lgamma(k + 1) - math.lgamma(low + 1) - math.lgamma(k - low + 1)
        log_term = log_choose + (k - low) * epsilon - log_norm + math.log(-math.expm1(-gap))
        hockey += math.exp(log_term)
    return -math.expm1(k * math.log1p(-delta)) + kept * hockey


def optimal_homogeneous_epsilon(epsilon: float, delta: float, k: int, target: float) -> float:
    """Return the least ε' (rounded up, to 10⁻⁹) with δ(ε') ≤ ``target`` for k compositions
    of one (ε, δ) pair; infinity when no ε' has (``target`` < 1 − (1 − δ)^k)."""
    low, high = 0.0, k * epsilon
    if optimal_homogeneous_delta(epsilon, delta, k, high) > target:
        return math.inf  # at k·ε only the δ's are left: no larger ε' has less
    while high - low > 1e-9 * max(1.0, high):
        middle = (low + high) / 2.0
        if optimal_homogeneous_delta(epsilon, delta, k, middle) <= target:
            high = middle
        else:
            low = middle
    return high


def advanced(epsilon: float, k: int, slack: float) -> float:
    """Return the advanced composition's ε' of k (ε, δ₀) pairs at δ = k·δ₀ + ``slack``
    (Dwork, Rothblum, Vadhan 2010, Theorem III.3)."""
    return math.sqrt(2.0 * k * math.log(1.0 / slack)) * epsilon + k * epsilon * math.expm1(epsilon)
