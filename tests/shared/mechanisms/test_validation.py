"""Bad parameters and values are refused at construction with a message that names the fix."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from ldp_telemetry.shared import (
    CountMeanSketch,
    GeneralizedRandomizedResponse,
    HadamardCountMeanSketch,
    ParameterError,
    RandomizedResponse,
    ValueOutOfDomain,
)
from ldp_telemetry.shared.mechanisms.grr import MAX_DOMAIN
from ldp_telemetry.shared.mechanisms.sketches.base import MAX_BUCKETS, MAX_ROWS

BAD_EPSILONS = [
    (0, "finite number > 0"),
    (-1.0, "finite number > 0"),
    (math.nan, "finite number > 0"),
    (math.inf, "finite number > 0"),
    (-math.inf, "finite number > 0"),
    (True, "must be a number, got bool"),
    ("1.0", "must be a number, got str"),
    (None, "must be a number"),
    (20.5, "at most 20"),
    (1e-300, "too small"),
]
BUILDERS: dict[str, Callable[..., Any]] = {
    "rr": lambda epsilon: RandomizedResponse(epsilon=epsilon),
    "grr": lambda epsilon: GeneralizedRandomizedResponse(epsilon=epsilon, domain=["a", "b"]),
    "cms": lambda epsilon: CountMeanSketch(epsilon=epsilon, k=2, m=4, hash_seed=0),
    "hcms": lambda epsilon: HadamardCountMeanSketch(epsilon=epsilon, k=2, m=4, hash_seed=0),
}


@pytest.mark.parametrize("mechanism", sorted(BUILDERS))
@pytest.mark.parametrize(("epsilon", "message"), BAD_EPSILONS)
def test_bad_epsilon_is_refused(mechanism: str, epsilon: Any, message: str) -> None:
    if mechanism == "rr" and epsilon is None:
        message = "give epsilon, or both alpha and beta"
    with pytest.raises(ParameterError, match=message):
        BUILDERS[mechanism](epsilon)


SKETCH_PARAMETERS = [
    ({"k": 0}, "k must be in \\[1, "),
    ({"k": -3}, "k must be in"),
    ({"k": MAX_ROWS + 1}, "k must be in"),
    ({"k": 2.0}, "k must be an integer, got float"),
    ({"k": True}, "k must be an integer, got bool"),
    ({"k": "8"}, "k must be an integer"),
    ({"m": 1}, "m must be in \\[2, "),
    ({"m": 0}, "m must be in"),
    ({"m": MAX_BUCKETS * 2}, "m must be in"),
    ({"m": 4.0}, "m must be an integer"),
    ({"hash_seed": -1}, "hash_seed must be in"),
    ({"hash_seed": 2**32}, "hash_seed must be in"),
    ({"hash_seed": 1.5}, "hash_seed must be an integer"),
]


@pytest.mark.parametrize("sketch", [CountMeanSketch, HadamardCountMeanSketch])
@pytest.mark.parametrize(("change", "message"), SKETCH_PARAMETERS)
def test_bad_sketch_parameters_are_refused(
    sketch: type, change: dict[str, Any], message: str
) -> None:
    params = {"epsilon": 2.0, "k": 4, "m": 16, "hash_seed": 1, **change}
    with pytest.raises(ParameterError, match=message):
        sketch(**params)


@pytest.mark.parametrize("m", [3, 12, 1000, 1025])
def test_hcms_m_must_be_a_power_of_two(m: int) -> None:
    with pytest.raises(ParameterError, match="power of two"):
        HadamardCountMeanSketch(epsilon=2.0, k=4, m=m, hash_seed=1)
    assert CountMeanSketch(epsilon=2.0, k=4, m=m, hash_seed=1).m == m  # cms takes any m


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"alpha": -0.1, "beta": 0.5}, "alpha must be in \\[0, 1\\]"),
        ({"alpha": 1.1, "beta": 0.5}, "alpha must be in \\[0, 1\\]"),
        ({"alpha": math.nan, "beta": 0.5}, "alpha must be in"),
        ({"alpha": 0.5, "beta": 1.5}, "beta must be in \\[0, 1\\]"),
        ({"alpha": 0.5, "beta": "0.5"}, "beta must be a number"),
        ({"alpha": True, "beta": 0.5}, "alpha must be a number, got bool"),
        ({"alpha": 1.0, "beta": 0.5}, "no privacy; use alpha < 1"),
        ({"alpha": 0.0, "beta": 0.5}, "independent of the truth; use alpha > 0"),
        ({"alpha": 0.5, "beta": 0.0}, "infinite epsilon"),
        ({"alpha": 0.5, "beta": 1.0}, "infinite epsilon"),
        ({"alpha": 0.5}, "give epsilon, or both alpha and beta"),
        ({"beta": 0.5}, "give epsilon, or both alpha and beta"),
        ({}, "give epsilon, or both alpha and beta"),
        ({"epsilon": 1.0, "alpha": 0.5, "beta": 0.5}, "not both"),
        ({"alpha": 1e-300, "beta": 0.5}, "too small"),
        ({"alpha": 0.5, "beta": 1e-320}, "above the maximum 20"),
    ],
)
def test_bad_rr_alpha_beta_are_refused(params: dict[str, Any], message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        RandomizedResponse(**params)


def test_rr_alpha_within_an_ulp_of_one_is_refused_not_a_division_by_zero() -> None:
    # Regression: in floats alpha + (1 − alpha)·beta rounded to 1 and P(0|1) became 0.
    # Computed exactly, the epsilon is about 39: above the cap, so a clear refusal.
    with pytest.raises(ParameterError, match="above the maximum"):
        RandomizedResponse(alpha=math.nextafter(1.0, 0.0), beta=0.9)
    rr = RandomizedResponse(alpha=1 - 1e-7, beta=0.9)  # epsilon ≈ 18.4, allowed
    assert 0 < rr.effective_epsilon <= rr.epsilon <= 20
    assert 0 < rr.threshold_no < rr.threshold_yes < 2**32


@pytest.mark.parametrize(
    ("domain", "message"),
    [
        (["only"], "2 to 4096 values"),
        ([], "2 to 4096 values"),
        (["a", "b", "a"], "distinct"),
        ("abc", "list of distinct strings"),
        (["a", 1], "only strings"),
        ({"a": 1, "b": 2}, "list of distinct strings"),
        ([str(i) for i in range(MAX_DOMAIN + 1)], "use cms or hcms"),
    ],
)
def test_bad_grr_domain_is_refused(domain: Any, message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        GeneralizedRandomizedResponse(epsilon=1.0, domain=domain)


def test_values_outside_the_domain_are_refused() -> None:
    rng = np.random.default_rng(0)
    grr = GeneralizedRandomizedResponse(epsilon=1.0, domain=["a", "b"])
    for bad in ("c", None, ["a"], 0):
        with pytest.raises(ValueOutOfDomain, match="not in this task's domain"):
            grr.privatize(bad, rng)
    with pytest.raises(ValueOutOfDomain):
        grr.privatize_many(["a", "z"], rng)
    with pytest.raises(ValueOutOfDomain):
        grr.estimate(grr.new_sums(), ["z"])
    rr = RandomizedResponse(epsilon=1.0)
    bad_answers: tuple[Any, ...] = (2, -1, "yes", None, 0.5)
    for bad in bad_answers:
        with pytest.raises(ValueOutOfDomain, match="takes a bool"):
            rr.privatize(bad, rng)
    cms = CountMeanSketch(epsilon=1.0, k=2, m=4, hash_seed=0)
    with pytest.raises(ValueOutOfDomain, match="str"):
        cms.privatize(b"bytes", rng)
    with pytest.raises(ValueOutOfDomain, match="one str"):
        cms.privatize_many("abc", rng)


def test_rr_takes_numpy_integer_arrays_of_zeros_and_ones() -> None:
    # Regression: iterating an int ndarray yields np.int64, which was refused.
    rr = RandomizedResponse(epsilon=1.0)
    out = rr.privatize_many(np.array([0, 1, 1, 0]), np.random.default_rng(0))
    assert out.shape == (4,) and set(out.tolist()) <= {0, 1}
    with pytest.raises(ValueOutOfDomain):
        rr.privatize_many(np.array([0, 2]), np.random.default_rng(0))


@pytest.mark.parametrize("level", [0.0, 1.0, 1.5, -0.5, math.nan])
def test_bad_confidence_level_is_refused(level: float) -> None:
    rr = RandomizedResponse(epsilon=1.0)
    with pytest.raises(ParameterError, match="confidence level must be in \\(0, 1\\)"):
        rr.estimate(rr.new_sums(), level=level)
