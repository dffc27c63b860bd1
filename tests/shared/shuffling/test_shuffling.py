"""The shuffle accountant: published figures, a brute-force check of δ(ε), and each
mechanism's variation-ratio parameters checked exactly against its output probabilities."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ldp_telemetry.shared.mechanisms.registry import params_class
from ldp_telemetry.shared.shuffling.accountant import RTOL, central_epsilon, delta
from ldp_telemetry.shared.shuffling.amplification import (
    Reduction,
    VariationRatio,
    clone_2021,
    generic,
    reduction_of,
    stronger_clone,
)
from tests.shared.cases import all_outputs
from tests.shared.mechanisms.test_privacy import CASES

# The stronger clone bound of a generic randomizer at δ = 10⁻⁸ (README.md, "central ε" table).
TABLE = [
    (1, 10**4, 0.056),
    (1, 10**5, 0.017),
    (1, 10**6, 0.0050),
    (2, 10**4, 0.146),
    (2, 10**5, 0.044),
    (2, 10**6, 0.013),
    (4, 10**4, 0.515),
    (4, 10**5, 0.151),
    (4, 10**6, 0.045),
    (8, 10**4, 8.0),
    (8, 10**5, 1.548),
    (8, 10**6, 0.381),
]


@pytest.mark.parametrize(("epsilon0", "n", "expected"), TABLE)
def test_stronger_clone_reproduces_the_design_table(
    epsilon0: float, n: int, expected: float
) -> None:
    # The table prints 2–4 digits: 1% relative is the tolerance, widened by the
    # rounding of the printed figure.
    digits = 10 ** (math.floor(math.log10(expected)) - 2) / 2 if expected < 8 else 0
    got = central_epsilon(stronger_clone(epsilon0), n, 1e-8)
    assert abs(got - expected) <= 0.01 * expected + digits


def test_generic_variation_ratio_is_the_stronger_clone() -> None:
    assert generic(4.0).reduction().alpha == pytest.approx(stronger_clone(4.0).alpha)
    assert generic(4.0).reduction().r == pytest.approx(stronger_clone(4.0).r)


def test_2021_bound_lies_in_apples_published_range() -> None:
    # apple/ml-shuffling-amplification README: n = 10⁵, ε₀ = 4, δ = 10⁻⁶ → [0.1675, 0.1728]
    assert 0.1675 <= central_epsilon(clone_2021(4.0), 10**5, 1e-6) <= 0.1728


MECHANISMS = [
    ("hcms", {"epsilon": 4.0, "k": 2048, "m": 1024, "hash_seed": 1}, 0.0313),
    ("olh", {"epsilon": 4.0, "k": 2048, "hash_seed": 1}, 0.0316),
    ("cms", {"epsilon": 4.0, "k": 2048, "m": 1024, "hash_seed": 1}, 0.0398),
    ("grr", {"epsilon": 4.0, "domain": [str(i) for i in range(256)]}, 0.0183),
]


@pytest.mark.parametrize(("name", "fields", "expected"), MECHANISMS)
def test_mechanism_aware_bounds_reproduce_the_design(
    name: str, fields: dict[str, Any], expected: float
) -> None:
    mechanism = params_class(name).from_fields(fields).build()
    got = central_epsilon(reduction_of(mechanism), 10**6, 1e-8)
    assert got == pytest.approx(expected, rel=0.01)
    assert got < central_epsilon(stronger_clone(mechanism.effective_epsilon), 10**6, 1e-8)


def _brute_force_delta(reduction: Reduction, n: int, epsilon: float) -> float:
    """Return Σ (P − e^ε Q)⁺ over every count vector (a, b) of n reports, exactly."""
    p, alpha, r, gamma = (
        Fraction(reduction.p),
        Fraction(reduction.alpha),
        Fraction(reduction.r),
        Fraction(reduction.blanket),
    )

    def others(a: int, b: int) -> Fraction:
        if a < 0 or b < 0 or a + b > n - 1:
            return Fraction(0)
        ways = math.factorial(n - 1) // (
            math.factorial(a) * math.factorial(b) * math.factorial(n - 1 - a - b)
        )
        return ways * r ** (a + b) * (1 - 2 * r) ** (n - 1 - a - b)

    total = 0.0
    for a, b in itertools.product(range(n + 1), repeat=2):
        if a + b > n:
            continue
        pa = p * alpha * others(a - 1, b) + alpha * others(a, b - 1) + gamma * others(a, b)
        qa = alpha * others(a - 1, b) + p * alpha * others(a, b - 1) + gamma * others(a, b)
        total += max(0.0, float(pa) - math.exp(epsilon) * float(qa))
    return total


@pytest.mark.parametrize(
    "reduction",
    [
        stronger_clone(1.0),
        clone_2021(2.0),
        VariationRatio(math.e**2, (math.e**2 - 1) / (math.e**2 + 9), math.e**2).reduction(),
        VariationRatio(math.e, 0.5 * (math.e - 1) / (math.e + 1), math.e).reduction(),
    ],
    ids=["stronger-clone", "clone-2021", "grr-d10", "hcms-like"],
)
@pytest.mark.parametrize("n", [1, 2, 7, 12])
@pytest.mark.parametrize("epsilon", [0.0, 0.3, 0.9])
def test_delta_equals_a_brute_force_sum(reduction: Reduction, n: int, epsilon: float) -> None:
    want = _brute_force_delta(reduction, n, epsilon)
    assert delta(reduction, n, epsilon) == pytest.approx(want, rel=1e-9, abs=1e-15)


@settings(max_examples=20, deadline=None)
@given(
    epsilon0=st.floats(0.05, 10.0),
    n=st.integers(1, 50_000),
    more=st.integers(1, 50_000),
    target=st.sampled_from([1e-4, 1e-6, 1e-8, 1e-10]),
)
@example(epsilon0=0.150390625, n=1, more=1, target=1e-8)  # ln(e^ε₀) is one ulp above ε₀
def test_never_above_epsilon0_and_falls_with_n(
    epsilon0: float, n: int, more: int, target: float
) -> None:
    reduction = stronger_clone(epsilon0)
    few, many = central_epsilon(reduction, n, target), central_epsilon(reduction, n + more, target)
    assert 0.0 <= few <= epsilon0
    assert many <= few * (1 + 4 * RTOL)  # each is rounded up by at most 2·RTOL
    assert delta(reduction, n, few) <= target


def _variation(mechanism: Any, values: tuple[Any, ...]) -> tuple[Fraction, Fraction, Fraction]:
    """Return (max ratio between two inputs, max total variation, max ratio to a third)."""
    outputs = all_outputs(mechanism)
    table = {v: [mechanism.output_probability(v, o) for o in outputs] for v in values}
    ratio, variation = Fraction(0), Fraction(0)
    for x, y in itertools.permutations(values, 2):
        ratio = max(ratio, *(px / py for px, py in zip(table[x], table[y], strict=True)))
        tv = sum(abs(px - py) for px, py in zip(table[x], table[y], strict=True)) / 2
        variation = max(variation, tv)
    return ratio, variation, ratio  # a third input is one of the values: q is the ratio


STATED = [name for name in sorted(CASES) if hasattr(CASES[name][0](), "variation_ratio")]


@pytest.mark.parametrize("case", STATED)
def test_stated_variation_ratio_holds_exactly(case: str) -> None:
    build, values = CASES[case]
    mechanism = build()
    stated = mechanism.variation_ratio()
    ratio, variation, third = _variation(mechanism, values)
    assert float(ratio) == pytest.approx(stated.p, rel=1e-12)
    assert float(variation) <= stated.beta * (1 + 1e-12)
    assert float(third) <= stated.q * (1 + 1e-12)


def test_every_frequency_kind_states_its_parameters() -> None:
    # rr, grr, olh, cms, hcms (names come from the tests' own cases, not from shared/)
    kinds = {case.split("-")[0] for case in STATED}
    assert kinds >= {"rr", "grr", "olh", "cms", "hcms"}


def test_a_mechanism_without_parameters_gets_the_generic_bound() -> None:
    class Plain:
        effective_epsilon = 3.0

    got, plain = reduction_of(Plain()), generic(3.0).reduction()
    assert (got.p, got.alpha, got.r, got.name) == (plain.p, plain.alpha, plain.r, plain.name)
    assert got.epsilon0 <= 3.0


@pytest.mark.parametrize("epsilon", [0.150390625, 0.05, 1.0, 2.0, 4.0, 7.3])
@pytest.mark.parametrize("name", ["rr", "grr", "olh", "cms", "hcms"])
def test_no_central_epsilon_is_above_the_tasks_own(name: str, epsilon: float) -> None:
    fields = {"epsilon": epsilon, "k": 64, "m": 64, "hash_seed": 1, "domain": ["a", "b", "c"]}
    params = params_class(name)
    mechanism = params.from_fields({k: v for k, v in fields.items() if k in params.fields()})
    built = mechanism.build()
    reduction = reduction_of(built)
    assert reduction.epsilon0 <= built.effective_epsilon
    assert central_epsilon(reduction, 1, 1e-8) <= built.effective_epsilon
