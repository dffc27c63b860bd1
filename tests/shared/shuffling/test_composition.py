"""A device's central (ε, δ) over many shuffled batches: dp-accounting's PLD composition of
the batches' pairs, checked against the exact optimal composition, brute force and the naive
sum."""

from __future__ import annotations

import itertools
import math

import pytest

from ldp_telemetry.shared.shuffling.composition import (
    advanced,
    compose,
    lifetime_delta,
    optimal_homogeneous_delta,
    optimal_homogeneous_epsilon,
    pld_epsilon,
)

D0 = 1e-8


def brute_force_delta(pairs: list[tuple[float, float]], total: float) -> float:
    """Return δ at ε' = total of the composed worst pairs, over every outcome (±ε, ∞)."""
    outcomes = [
        [(math.inf, d), (e, (1 - d) / (1 + math.exp(-e))), (-e, (1 - d) / (1 + math.exp(e)))]
        for e, d in pairs
    ]
    hockey = 0.0
    for combination in itertools.product(*outcomes):
        loss = sum(value for value, _ in combination)
        mass = math.prod(probability for _, probability in combination)
        if loss == math.inf:
            hockey += mass
        elif loss > total:
            hockey += mass * (1.0 - math.exp(total - loss))
    return hockey


@pytest.mark.parametrize("epsilon", [0.01, 0.3, 2.85])
def test_one_batch_is_its_own_epsilon(epsilon: float) -> None:
    assert compose([(epsilon, D0)], lifetime_delta([D0])) == epsilon
    assert compose([(epsilon, D0)], D0) == epsilon
    assert optimal_homogeneous_epsilon(epsilon, D0, 1, D0) == pytest.approx(epsilon, rel=1e-9)


@pytest.mark.parametrize(
    "pairs", [[(0.5, D0)] * 3, [(0.2, 1e-6), (0.7, 1e-6), (1.1, 1e-6)], [(1.0, 0.0)] * 4]
)
@pytest.mark.parametrize("total", [0.0, 0.4, 1.0])
def test_the_closed_form_and_the_pld_match_brute_force(
    pairs: list[tuple[float, float]], total: float
) -> None:
    exact = brute_force_delta(pairs, total)
    epsilon, delta = pairs[0]
    if all(pair == pairs[0] for pair in pairs):
        assert optimal_homogeneous_delta(epsilon, delta, len(pairs), total) == pytest.approx(
            exact, rel=1e-12, abs=1e-18
        )
    # The PLD's ε at that δ is the brute force's ε' (pessimistic: never below it).
    if exact > sum(d for _, d in pairs) and total > 0:
        got = pld_epsilon(pairs, exact * (1 + 1e-9))
        assert total - 1e-6 <= got <= total * (1 + 5e-3) + 1e-6
        assert total - 1e-6 <= compose(pairs, exact * (1 + 1e-9)) <= got * (1 + 1e-8)


def test_kairouz_closed_form_at_its_grid_points() -> None:
    # Kairouz, Oh, Viswanath 2015, Theorem 3.3: k-fold composition is ((k − 2i)ε, δᵢ)-DP
    # with δᵢ = 1 − (1 − δ)^k (1 − Σ_{l<i} C(k,l)(e^{(k−l)ε} − e^{(k−2i+l)ε})/(1 + e^ε)^k).
    epsilon, k = 0.4, 9
    for i in range(5):
        published = (
            sum(
                math.comb(k, low)
                * (math.exp((k - low) * epsilon) - math.exp((k - 2 * i + low) * epsilon))
                for low in range(i)
            )
            / (1 + math.exp(epsilon)) ** k
        )
        expected = 1 - (1 - D0) ** k * (1 - published)
        got = optimal_homogeneous_delta(epsilon, D0, k, (k - 2 * i) * epsilon)
        assert got == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("epsilon", [0.05, 0.5, 2.0])
def test_a_year_of_daily_batches_meets_the_exact_composition(epsilon: float) -> None:
    k = 365
    target = lifetime_delta([D0] * k)
    exact = optimal_homogeneous_epsilon(epsilon, D0, k, target)
    pld = pld_epsilon([(epsilon, D0)] * k, target)
    # pessimistic, within 0.5% (the closed form's own bisection is 1e-9)
    assert exact * (1 - 1e-8) <= pld <= exact * 1.005
    assert compose([(epsilon, D0)] * k, target) == exact  # one pair: the closed form
    assert exact < k * epsilon
    assert exact < advanced(epsilon, k, k * D0)


def test_composition_grows_with_the_batches_and_stays_under_the_naive_sum() -> None:
    previous = 0.0
    for k in (1, 2, 5, 30, 100, 365):
        composed = compose([(0.3, D0)] * k, lifetime_delta([D0] * k))
        assert previous < composed <= 0.3 * k
        previous = composed
    assert previous < 0.5 * 0.3 * 365  # a year: under half the naive sum


def test_batches_of_different_epsilons_sit_between_their_homogeneous_bounds() -> None:
    pairs = [(0.1 + 0.2 * (day % 7) / 6, D0) for day in range(365)]
    target = lifetime_delta([D0] * 365)
    mixed = compose(pairs, target)
    assert mixed == pld_epsilon(pairs, target)  # lower than the closed form at the largest
    assert optimal_homogeneous_epsilon(0.1, D0, 365, target) < mixed
    assert mixed < optimal_homogeneous_epsilon(0.3, D0, 365, target)
    assert mixed < sum(e for e, _ in pairs)
    # each batch counted at an ε no smaller than its own: the order does not matter
    assert compose(pairs[::-1], target) == pytest.approx(mixed, rel=1e-12)


def test_a_target_below_the_batches_deltas_is_not_met_by_the_naive_sum() -> None:
    # δ(ε') ≥ 1 − (1 − δ)^k whatever ε': at δ = one batch's δ, 3 batches reach no ε at all
    assert compose([(0.3, 1e-6)] * 3, 1e-6) == math.inf
    assert compose([(0.3, 1e-6), (0.2, 1e-6)], 1e-6) == math.inf
    assert optimal_homogeneous_epsilon(0.3, 1e-6, 3, 2.99e-6) == math.inf
    assert optimal_homogeneous_epsilon(0.3, 1e-6, 3, 3e-6) <= 0.9  # 1 − (1 − δ)³ < 3δ
    with pytest.raises(ValueError, match="nothing"):
        compose([], 1e-6)
