"""LOLOHA (grr's longitudinal variant): exact ε₁ and ε∞, at most g permanent responses per
device for ever, a row from a public family, the estimator's closed-form variance, optimal g."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, cast

import numpy as np
import pytest

from ldp_telemetry.shared import ParameterError, TaskConfig
from ldp_telemetry.shared.mechanisms.lifetime.loloha import LocalHashingLongitudinal
from ldp_telemetry.shared.mechanisms.lifetime.spec import (
    default_seeds,
    optimal_buckets,
    rare_value_variance,
)
from ldp_telemetry.shared.randomness import SCALE
from tests.shared.cases import STRINGS, all_outputs, fraction_log, worst_case_ratio

DOMAIN = [f"v{i}" for i in range(6)]


def loloha_task(**option: Any) -> TaskConfig:
    layer: dict[str, Any] = {"variant": "loloha", "epsilon_inf": 2.0, "epsilon_1": 1.0}
    layer.update({"hash_seed": 11, **option})
    return TaskConfig.create(task_id="screens", mechanism="grr", domain=DOMAIN, longitudinal=layer)


def loloha(**option: Any) -> LocalHashingLongitudinal:
    return cast(LocalHashingLongitudinal, loloha_task(**option).mechanism_object)


@pytest.mark.parametrize(
    ("g", "epsilon_inf", "epsilon_1"), [(2, 2.0, 1.0), (3, 4.0, 0.5), ("optimal", 3.0, 1.7)]
)
def test_one_report_spends_exactly_epsilon_1_and_a_bucket_epsilon_inf(
    g: Any, epsilon_inf: float, epsilon_1: float
) -> None:
    mechanism = loloha(g=g, epsilon_inf=epsilon_inf, epsilon_1=epsilon_1, seeds=3)
    report_ratio = worst_case_ratio(mechanism, DOMAIN)
    assert math.isclose(float(report_ratio), math.exp(mechanism.effective_epsilon), rel_tol=1e-12)
    assert report_ratio > Fraction(math.exp(mechanism.effective_epsilon * (1 - 1e-9)))
    permanent_ratio = worst_case_ratio(mechanism.permanent, DOMAIN)
    assert math.isclose(
        fraction_log(permanent_ratio), mechanism.effective_epsilon_inf, rel_tol=1e-12
    )
    assert mechanism.effective_epsilon <= epsilon_1 < mechanism.effective_epsilon_inf
    assert mechanism.effective_epsilon_inf <= epsilon_inf
    for value in DOMAIN:  # one report's probabilities: a distribution
        assert sum(mechanism.output_probability(value, o) for o in all_outputs(mechanism)) == 1


def test_the_composition_is_the_two_layers_enumerated() -> None:
    """P(report | value) = Σ_prr P∞(prr | value) · P_irr(report | prr), exactly."""
    mechanism = loloha(g=3, seeds=2)
    permanent: Any = mechanism.permanent
    move = Fraction(mechanism.threshold, SCALE)
    outputs = all_outputs(mechanism)

    def irr(report: Any, prr: Any) -> Fraction:
        if report.row != prr.row:
            return Fraction(0)
        return 1 - (permanent.g - 1) * move if report.index == prr.index else move

    for value in DOMAIN[:3]:
        for report in outputs:
            composed = sum(
                permanent.output_probability(value, prr) * irr(report, prr) for prr in outputs
            )
            assert mechanism.output_probability(value, report) == composed


@pytest.mark.parametrize("epsilon_1", [0.4, 1.0, 1.9])
def test_epsilon_1_asked_is_met_with_the_least_noise(epsilon_1: float) -> None:
    mechanism = loloha(epsilon_1=epsilon_1)
    assert mechanism.effective_epsilon <= epsilon_1
    one_less = cast(Any, mechanism.permanent).compose_flip(mechanism.threshold - 1)
    assert one_less.effective_epsilon > epsilon_1


def test_the_task_publishes_g_and_both_epsilons_under_protocol_1_1() -> None:
    task = loloha_task(g="optimal", epsilon_inf=4.0, epsilon_1=1.0)
    served = task.to_dict()
    assert served["protocol"] == "1.1"
    g = optimal_buckets(4.0, 1.0)
    assert served["derived"] == {
        "g": g,
        "T": math.ceil(Fraction(1.0 / (math.exp(4.0) + g - 1)) * SCALE),
        "T_i": cast(Any, task.mechanism_object).threshold,
    }
    assert served["longitudinal"] == {
        "variant": "loloha",
        "epsilon_inf": 4.0,
        "epsilon_1": 1.0,
        "g": "optimal",
        "seeds": default_seeds(len(DOMAIN), g),  # filled in: the fingerprint holds it
        "hash_seed": 11,
    }
    assert served["effective_epsilon"] <= 1.0 < served["effective_epsilon_inf"] <= 4.0
    again = TaskConfig.from_dict(served)
    assert again.fingerprint == task.fingerprint
    assert again.to_dict() == served


def test_a_new_task_draws_its_hash_seed() -> None:
    layer = {"variant": "loloha", "epsilon_inf": 2.0, "epsilon_1": 1.0}
    seeds = {
        TaskConfig.create(
            task_id="t", mechanism="grr", domain=DOMAIN, longitudinal=layer
        ).to_dict()["longitudinal"]["hash_seed"]
        for _ in range(4)
    }
    assert len(seeds) > 1


@pytest.mark.parametrize(
    ("epsilon_inf", "epsilon_1"), [(2.0, 1.0), (4.0, 1.0), (4.0, 2.0), (6.0, 1.0), (1.0, 0.5)]
)
def test_the_optimal_g_is_the_least_variance_of_one_report_at_epsilon_1(
    epsilon_inf: float, epsilon_1: float
) -> None:
    """Calibrated to ε₁ exactly, one report is GRR over g at ε₁ whatever ε∞ is: the variance,
    and so the optimal g, depend on ε₁ alone (the integer nearest OLH's e^ε₁ + 1 optimum)."""
    g = optimal_buckets(epsilon_inf, epsilon_1)
    assert all(
        rare_value_variance(g, epsilon_inf, epsilon_1) <= rare_value_variance(h, epsilon_inf, e)
        for h in range(2, 64)
        for e in [epsilon_1]
    )
    assert g == optimal_buckets(epsilon_inf + 1.0, epsilon_1)
    assert abs(g - (math.exp(epsilon_1) + 1)) < 1
    # The implemented channel agrees: its keep probability is GRR's over g at ε₁.
    mechanism = loloha(g=g, epsilon_inf=epsilon_inf, epsilon_1=epsilon_1)
    b = math.exp(mechanism.effective_epsilon)
    assert cast(Any, mechanism.instant).p == pytest.approx(b / (b + g - 1), rel=1e-12)


def test_the_papers_closed_form_g_is_for_its_own_epsilon_1() -> None:
    """Arcolezi et al. take one report's ratio as (p1p2 + q1q2)/(p1q2 + q1p2), exact at g = 2
    only: beyond, it overstates ε₁ (at g = 3, ε∞ = 2 their p2 for ε₁ = 1 spends 0.948), so their
    closed-form g (2.79 at ε∞ = 2, ε₁ = 1) is not the optimum of the exact channel (4)."""
    g, a, b = 3, math.exp(2.0), math.exp(1.0)
    p1 = a / (a + g - 1)
    q1 = (1 - p1) / (g - 1)
    p2 = (q1 - b * p1) / (-p1 * b + g * q1 * b - q1 * b - p1 * (g - 1) + q1)
    q2 = (1 - p2) / (g - 1)
    keep, other = p1 * p2 + (1 - p1) * q2, p1 * q2 + q1 * p2 + (g - 2) * q1 * q2
    assert math.log(keep / other) == pytest.approx(0.948, abs=1e-3)
    a, b = math.exp(2.0), math.exp(1.0)
    root = math.sqrt(a**4 - 14 * a**2 - 12 * a**2 * b**2 + 12 * a * b + 12 * a**3 * b + 1)
    assert (root - a**2 + 6 * a - 6 * b + 1) / (6 * (a - b)) == pytest.approx(2.7918, abs=1e-4)
    assert optimal_buckets(2.0, 1.0) == 4
    assert rare_value_variance(4, 2.0, 1.0) < rare_value_variance(3, 2.0, 1.0)


def _papers_variance(g: int, epsilon_inf: float, epsilon_1: float) -> float:
    """Return the rare-value variance of the paper's own channel (its p2 for ε₁)."""
    a, b = math.exp(epsilon_inf), math.exp(epsilon_1)
    p1 = a / (a + g - 1)
    q1 = (1 - p1) / (g - 1)
    p2 = (q1 - b * p1) / (-p1 * b + g * q1 * b - q1 * b - p1 * (g - 1) + q1)
    keep = p1 * p2 + (1 - p1) * (1 - p2) / (g - 1)
    return (1 / g) * (1 - 1 / g) / (keep - 1 / g) ** 2


def _papers_closed_form(epsilon_inf: float, epsilon_1: float) -> float:
    a, b = math.exp(epsilon_inf), math.exp(epsilon_1)
    root = math.sqrt(a**4 - 14 * a**2 - 12 * a**2 * b**2 + 12 * a * b + 12 * a**3 * b + 1)
    return (root - a**2 + 6 * a - 6 * b + 1) / (6 * (a - b))


@pytest.mark.parametrize(
    ("epsilon_inf", "epsilon_1", "papers", "ours"),
    [(2.0, 1.0, 3, 4), (4.0, 1.0, 3, 4), (3.0, 1.7, 5, 6), (4.0, 2.0, 7, 8)],
)
def test_the_papers_closed_form_is_the_optimum_of_its_own_channel(
    epsilon_inf: float, epsilon_1: float, papers: int, ours: int
) -> None:
    """Rounded, the paper's g minimises its own (over-noised) channel's variance; ours the
    implemented channel's: neither formula is wrong, they optimise different channels."""
    variances = {g: _papers_variance(g, epsilon_inf, epsilon_1) for g in range(2, 64)}
    assert round(_papers_closed_form(epsilon_inf, epsilon_1)) == papers
    assert min(variances, key=lambda g: variances[g]) == papers
    assert optimal_buckets(epsilon_inf, epsilon_1) == ours


def test_a_device_draws_at_most_g_permanent_responses_whatever_its_values() -> None:
    mechanism = loloha(g=2, seeds=16)
    for device in range(20):
        bound = cast(LocalHashingLongitudinal, mechanism.for_device(bytes([device]) * 32))
        drawn = {bound.permanent_bytes(value) for value in DOMAIN}
        assert len(drawn) <= 2
        for value in DOMAIN:  # values sharing a bucket share its permanent response
            same = [v for v in DOMAIN if bound.bucket(v) == bound.bucket(value)]
            assert {bound.permanent_response(v) for v in same} == {bound.permanent_response(value)}
            assert bound.permanent_response(value).row == bound.row()


def test_rows_come_from_the_public_family_and_spread_over_it() -> None:
    mechanism = loloha(seeds=8)
    rows = [
        cast(LocalHashingLongitudinal, mechanism.for_device(i.to_bytes(32, "big"))).row()
        for i in range(4_000)
    ]
    counts = np.bincount(rows, minlength=8)
    chi2 = float(((counts - 500) ** 2 / 500).sum())
    assert chi2 < 24.3  # chi-square, 7 degrees of freedom, p = 0.001
    one = cast(LocalHashingLongitudinal, mechanism.for_device(b"k" * 32))
    assert one.row() == one.row()
    other_task = cast(LocalHashingLongitudinal, loloha(seeds=8, hash_seed=12).for_device(b"k" * 32))
    assert {one.row(), other_task.row()} <= set(range(8))


def test_reports_reveal_the_permanent_bucket_never_more() -> None:
    mechanism = cast(LocalHashingLongitudinal, loloha(g=4, seeds=4).for_device(b"d" * 32))
    prr = mechanism.permanent_response("v1")
    rng = np.random.default_rng(5)
    reports = [mechanism.privatize("v1", rng) for _ in range(2_000)]
    assert {r.row for r in reports} == {prr.row}
    counts = np.bincount([r.index for r in reports], minlength=4)
    assert int(np.argmax(counts)) == prr.index


def test_estimates_are_unbiased_with_the_closed_form_variance() -> None:
    """Fresh devices (privatize_many) over 300 populations vs the closed form."""
    mechanism = loloha(g=2, epsilon_inf=3.0, epsilon_1=1.5, seeds=4096, hash_seed=5)
    truth = [DOMAIN[0]] * 1_200 + [DOMAIN[1]] * 600 + [DOMAIN[-1]] * 200
    rng = np.random.default_rng(2026)
    found, errors = [], []
    for _ in range(300):
        sums = mechanism.new_sums()
        sums.add_many(mechanism.privatize_many(truth, rng))
        estimates = mechanism.estimate(sums, DOMAIN[:2])
        found.append(estimates.estimate[0])
        errors.append(estimates.std_error[0])
    spread, claimed = float(np.std(found)), float(np.mean(errors))
    assert abs(np.mean(found) - 1_200) < 4 * claimed / math.sqrt(300)
    assert spread == pytest.approx(claimed, rel=0.15)
    assert mechanism.estimate(sums).values == tuple(DOMAIN) or list(
        mechanism.estimate(sums).values
    ) == list(DOMAIN)


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ({"g": 1}, "g must be an integer"),
        ({"seeds": 0}, "seeds must be an integer"),
        ({"epsilon_1": 3.0}, "must be below epsilon_inf"),
        ({"variant": "rappor"}, "variant must be 'loloha'"),
        ({"flip": 0.1}, "loloha takes"),
    ],
)
def test_bad_options_are_refused_naming_the_fix(option: dict[str, Any], message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        loloha(**option)


def test_loloha_is_for_grr_and_leaves_epsilon_out() -> None:
    layer = {"variant": "loloha", "epsilon_inf": 2.0, "epsilon_1": 1.0, "hash_seed": 1}
    with pytest.raises(ParameterError, match="for grr tasks"):
        TaskConfig.create(task_id="t", mechanism="rr", longitudinal=layer)
    with pytest.raises(ParameterError, match="leave epsilon out"):
        TaskConfig.create(
            task_id="t", mechanism="grr", domain=STRINGS[:3], epsilon=1.0, longitudinal=layer
        )
