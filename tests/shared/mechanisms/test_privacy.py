"""Exact privacy of every mechanism, from output_probability over all outputs (Fractions).

For small parameters every report is enumerated; the worst-case likelihood ratio over all
pairs of distinct inputs must equal e^effective_epsilon (to 1e-12), never exceed
e^epsilon, and a claim just below the effective epsilon must fail (OpenDP's habit of
pinning epsilon at the boundary).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from ldp_telemetry.shared import (
    CountMeanSketch,
    GeneralizedRandomizedResponse,
    HadamardCountMeanSketch,
    OptimizedLocalHashing,
    RandomizedResponse,
)
from ldp_telemetry.shared.mechanisms.oue import OptimizedUnaryEncoding
from ldp_telemetry.shared.mechanisms.ss import SubsetSelection
from tests.shared.cases import (
    HH_VALUES,
    STRINGS,
    all_outputs,
    fraction_log,
    tiny_heavy_hitters,
    worst_case_ratio,
)

PrivacyCase = tuple[Callable[[], Any], tuple[Any, ...]]

CASES: dict[str, PrivacyCase] = {
    "rr-eps0.5": (lambda: RandomizedResponse(epsilon=0.5), (True, False)),
    "rr-eps-ln3": (lambda: RandomizedResponse(epsilon=math.log(3)), (True, False)),
    "rr-eps7.3": (lambda: RandomizedResponse(epsilon=7.3), (True, False)),
    "rr-alpha.5-beta.5": (lambda: RandomizedResponse(alpha=0.5, beta=0.5), (True, False)),
    "rr-alpha.3-beta.8": (lambda: RandomizedResponse(alpha=0.3, beta=0.8), (True, False)),
    "rr-alpha.9-beta.1": (lambda: RandomizedResponse(alpha=0.9, beta=0.1), (True, False)),
    "rr-alpha.25-beta.6": (lambda: RandomizedResponse(alpha=0.25, beta=0.6), (True, False)),
    "grr-d3-eps0.5": (
        lambda: GeneralizedRandomizedResponse(epsilon=0.5, domain=STRINGS[:3]),
        STRINGS[:3],
    ),
    "grr-d4-eps3.7": (
        lambda: GeneralizedRandomizedResponse(epsilon=3.7, domain=STRINGS[:4]),
        STRINGS[:4],
    ),
    "cms-k2-m4-eps1": (lambda: CountMeanSketch(epsilon=1.0, k=2, m=4, hash_seed=3), STRINGS),
    "cms-k3-m5-eps4": (lambda: CountMeanSketch(epsilon=4.0, k=3, m=5, hash_seed=11), STRINGS[:5]),
    "cms-k3-m6-eps2.5": (
        lambda: CountMeanSketch(epsilon=2.5, k=3, m=6, hash_seed=2024),
        STRINGS[:4],
    ),
    "hcms-k2-m4-eps1": (
        lambda: HadamardCountMeanSketch(epsilon=1.0, k=2, m=4, hash_seed=3),
        STRINGS,
    ),
    "hcms-k2-m4-eps4": (
        lambda: HadamardCountMeanSketch(epsilon=4.0, k=2, m=4, hash_seed=99),
        STRINGS,
    ),
    "hcms-k3-m8-eps0.7": (
        lambda: HadamardCountMeanSketch(epsilon=0.7, k=3, m=8, hash_seed=5),
        STRINGS[:5],
    ),
    "olh-k2-eps1": (lambda: OptimizedLocalHashing(epsilon=1.0, k=2, hash_seed=3), STRINGS),
    "olh-k3-eps2.3": (lambda: OptimizedLocalHashing(epsilon=2.3, k=3, hash_seed=8), STRINGS[:5]),
    "oue-d3-eps0.5": (
        lambda: OptimizedUnaryEncoding(epsilon=0.5, domain=STRINGS[:3]),
        STRINGS[:3],
    ),
    "oue-d5-eps3.3": (
        lambda: OptimizedUnaryEncoding(epsilon=3.3, domain=STRINGS[:5]),
        STRINGS[:5],
    ),
    "ss-d5-eps0.5": (lambda: SubsetSelection(epsilon=0.5, domain=STRINGS[:5]), STRINGS[:5]),
    "ss-d7-eps0.1": (lambda: SubsetSelection(epsilon=0.1, domain=STRINGS), STRINGS),
    "ss-d6-eps1.2": (lambda: SubsetSelection(epsilon=1.2, domain=STRINGS[:6]), STRINGS[:6]),
    "ss-d4-eps6": (lambda: SubsetSelection(epsilon=6.0, domain=STRINGS[:4]), STRINGS[:4]),
    # Unbound hh (level drawn per report): each output is one level's CMS report.
    "hh-G3-k2-m3-eps1": (lambda: tiny_heavy_hitters(epsilon=1.0, hash_seed=3), HH_VALUES),
    "hh-G3-k2-m3-eps4": (
        lambda: tiny_heavy_hitters(epsilon=4.0, hash_seed=11),
        (*HH_VALUES, "b", "aaa"),
    ),
}


@pytest.fixture(params=sorted(CASES), name="case")
def fixture_case(request: pytest.FixtureRequest) -> tuple[Any, tuple[Any, ...]]:
    build, values = CASES[request.param]
    return build(), values


def _assert_some_pair_is_distinguishable(mechanism: Any, values: tuple[Any, ...]) -> None:
    """A sketch pair hashing alike in every row would make the test vacuous."""
    if not hasattr(mechanism, "hashes"):
        return
    keys = np.array([mechanism.key(v) for v in values], dtype=np.uint64)
    buckets = mechanism.hashes.bucket_matrix(keys, slice(0, mechanism.k))
    assert len({tuple(row) for row in buckets}) > 1


def test_worst_case_ratio_is_exactly_the_effective_epsilon(case: tuple[Any, Any]) -> None:
    mechanism, values = case
    _assert_some_pair_is_distinguishable(mechanism, values)
    worst = worst_case_ratio(mechanism, values)
    assert math.isclose(float(worst), math.exp(mechanism.effective_epsilon), rel_tol=1e-12)
    assert fraction_log(worst) <= mechanism.epsilon * (1 + 1e-12)
    below = mechanism.effective_epsilon * (1 - 1e-9)
    assert worst > Fraction(math.exp(below)), "the claim must fail just below effective"


def test_output_probabilities_sum_to_exactly_one(case: tuple[Any, Any]) -> None:
    mechanism, values = case
    outputs = all_outputs(mechanism)
    for value in values:
        assert sum(mechanism.output_probability(value, o) for o in outputs) == 1


@pytest.mark.parametrize(
    "epsilon", [1e-3, 0.1, 0.5, math.log(3), 1.0, 2.0, 4.0, 8.0, 12.5, 19.99, 20.0]
)
def test_effective_epsilon_never_exceeds_the_epsilon_asked(epsilon: float) -> None:
    mechanisms: list[Any] = (
        [
            RandomizedResponse(epsilon=epsilon),
            CountMeanSketch(epsilon=epsilon, k=4, m=16, hash_seed=1),
            HadamardCountMeanSketch(epsilon=epsilon, k=4, m=16, hash_seed=1),
            OptimizedLocalHashing(epsilon=epsilon, k=4, hash_seed=1),
        ]
        + [
            GeneralizedRandomizedResponse(epsilon=epsilon, domain=[str(i) for i in range(d)])
            for d in (3, 7, 100)
            if epsilon > 0.01
        ]
        + [
            kind(epsilon=epsilon, domain=[str(i) for i in range(d)])
            for kind in (OptimizedUnaryEncoding, SubsetSelection)
            for d in (2, 9, 300)
            if epsilon > 0.01
        ]
    )
    for mechanism in mechanisms:
        assert 0 < mechanism.effective_epsilon <= mechanism.epsilon
        # Rounding the smallest threshold T up by < 1 (each of d−1 times for grr) costs
        # about d/T of epsilon; anything more means the thresholds are mis-derived.
        smallest = min(
            getattr(mechanism, name)
            for name in ("threshold_no", "threshold_other", "flip_threshold", "threshold_out")
            if hasattr(mechanism, name)
        )
        width = getattr(mechanism, "d", 2)
        assert mechanism.epsilon - mechanism.effective_epsilon <= 4 * math.log1p(width / smallest)


@pytest.mark.parametrize(
    ("alpha", "beta"), list(itertools.product((0.1, 0.5, 0.77, 0.99), (0.01, 0.5, 0.9)))
)
def test_rr_alpha_beta_effective_epsilon_is_within_the_asked(alpha: float, beta: float) -> None:
    rr = RandomizedResponse(alpha=alpha, beta=beta)
    worst = worst_case_ratio(rr, (True, False))
    assert math.isclose(fraction_log(worst), rr.effective_epsilon, rel_tol=1e-12)
    assert rr.effective_epsilon <= rr.epsilon * (1 + 1e-12)
