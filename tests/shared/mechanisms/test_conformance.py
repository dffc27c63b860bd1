"""One conformance suite run over every mechanism (scikit-learn's parametrize_with_checks).

Each check states a property every mechanism must have; a new mechanism joins by adding
a Case to tests.shared.cases.conformance_cases().
"""

from __future__ import annotations

import os
import random
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from scipy.stats import chisquare

from ldp_telemetry.shared import (
    MECHANISMS,
    Estimates,
    HadamardReport,
    ParameterError,
    SketchReport,
)
from ldp_telemetry.shared.mechanisms.hh.mechanism import HeavyHitters
from ldp_telemetry.shared.mechanisms.longitudinal import Longitudinal
from ldp_telemetry.shared.mechanisms.sketches.base import Sketch
from tests.shared.cases import (
    Case,
    FakeEntropy,
    all_outputs,
    batch_columns,
    batch_reports,
    conformance_cases,
    output_key,
)

DRAWS = 20_000  # per path; cells expected below 5 draws are pooled (chi-square validity)
P_FLOOR = 1e-4  # seeded, so deterministic; a real mismatch gives p far below this


def goodness_of_fit(mechanism: Any, value: Any, reports: list[Any]) -> float:
    """Return the chi-square p-value of reports against output_probability(value, ·)."""
    observed = Counter(output_key(mechanism, r) for r in reports)
    outputs = all_outputs(mechanism)
    expected = np.array([float(mechanism.output_probability(value, o)) for o in outputs])
    counts = np.array([observed.pop(output_key(mechanism, o), 0) for o in outputs], float)
    assert not observed, f"reports outside the output space: {list(observed)[:3]}"
    expected *= len(reports)
    small = expected < 5
    f_obs = np.append(counts[~small], counts[small].sum())
    f_exp = np.append(expected[~small], expected[small].sum())
    if not small.any():
        f_obs, f_exp = f_obs[:-1], f_exp[:-1]
    return float(chisquare(f_obs, f_exp).pvalue)


def check_parameters(case: Case, mechanism: Any) -> None:
    assert mechanism.name == case.name.partition("-")[0] in MECHANISMS
    assert isinstance(mechanism.epsilon, float) and isinstance(mechanism.effective_epsilon, float)
    assert 0 < mechanism.effective_epsilon <= mechanism.epsilon
    assert type(mechanism).__name__ in repr(mechanism)


def check_seeded_runs_repeat(case: Case, mechanism: Any) -> None:
    def run(seed: int) -> list[Any]:
        rng = np.random.default_rng(seed)
        singles = [mechanism.privatize(v, rng) for v in case.values]
        batch = batch_reports(mechanism, mechanism.privatize_many(list(case.values), rng))
        return [output_key(mechanism, r) for r in singles + batch]

    assert run(1) == run(1)
    assert any(run(1) != run(s) for s in (2, 3))


def check_privatize_matches_output_probability(case: Case, mechanism: Any) -> None:
    for index, value in enumerate(case.values[:2]):
        rng = np.random.default_rng(100 + index)
        singles = [mechanism.privatize(value, rng) for _ in range(DRAWS)]
        assert goodness_of_fit(mechanism, value, singles) > P_FLOOR


def check_privatize_many_matches_output_probability(case: Case, mechanism: Any) -> None:
    for index, value in enumerate(case.values[:2]):
        batch = mechanism.privatize_many([value] * DRAWS, np.random.default_rng(200 + index))
        assert len(batch) == DRAWS
        assert goodness_of_fit(mechanism, value, batch_reports(mechanism, batch)) > P_FLOOR


def check_default_rng_matches_output_probability(
    case: Case, mechanism: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rng=None path (rejection sampling on OS words) has the same distribution."""
    fake = FakeEntropy(case.name.encode(), size=1 << 23)
    monkeypatch.setattr(os, "urandom", fake)
    monkeypatch.setattr(random, "_urandom", fake)
    value = case.values[0]
    batch = mechanism.privatize_many([value] * DRAWS)
    assert goodness_of_fit(mechanism, value, batch_reports(mechanism, batch)) > P_FLOOR
    singles = [mechanism.privatize(value) for _ in range(2000)]
    assert goodness_of_fit(mechanism, value, singles) > P_FLOOR


def check_estimates_are_well_formed(case: Case, mechanism: Any) -> None:
    values = [case.values[i % len(case.values)] for i in range(1000)]
    sums = mechanism.new_sums()
    sums.add_many(mechanism.privatize_many(values, np.random.default_rng(7)))
    candidates = case.candidates
    result = mechanism.estimate(sums, candidates)
    narrow = mechanism.estimate(sums, candidates, level=0.5)
    assert isinstance(result, Estimates) and result.values == tuple(candidates)
    assert result.n == 1000 and result.level == 0.95
    for column in (result.estimate, result.std_error, result.ci_low, result.ci_high):
        assert column.shape == (len(candidates),) and np.all(np.isfinite(column))
    assert np.all(result.std_error > 0)
    assert np.all((result.ci_low < result.estimate) & (result.estimate < result.ci_high))
    assert np.all(narrow.ci_high - narrow.ci_low < result.ci_high - result.ci_low)
    assert np.allclose(result.ci_high - result.estimate, 1.959963984540054 * result.std_error)
    rows = result.rows()
    assert [r["value"] for r in rows] == candidates
    # a row may also say whether its interval can be trusted (numeric: reliable, reason)
    assert set(rows[0]) - {"reliable", "reason"} == {
        "value",
        "estimate",
        "std_error",
        "ci_low",
        "ci_high",
    }
    shares = result.proportions()
    assert np.allclose(shares.estimate * 1000, result.estimate)


def check_empty_sums_estimate_zero(case: Case, mechanism: Any) -> None:
    result = mechanism.estimate(mechanism.new_sums(), case.candidates)
    assert result.n == 0
    assert np.array_equal(result.estimate, np.zeros(len(case.candidates)))
    assert np.all(np.isfinite(result.std_error))
    assert np.all(result.proportions().estimate == 0)


def check_stack_rebuilds_privatize_many_batches(case: Case, mechanism: Any) -> None:
    """stack() of a batch's single reports gives the batch back, dtypes included."""
    batch = mechanism.privatize_many(list(case.values) * 50, np.random.default_rng(11))
    stacked = mechanism.stack(batch_reports(mechanism, batch))
    assert type(stacked) is type(batch) and len(stacked) == len(batch)
    for ours, theirs in zip(batch_columns(stacked), batch_columns(batch), strict=True):
        assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs)
    assert len(mechanism.stack([])) == 0
    one, many = mechanism.new_sums(), mechanism.new_sums()
    one.add_many(stacked)
    many.add_many(batch)
    assert one == many


def check_estimate_without_candidates(case: Case, mechanism: Any) -> None:
    """candidates=None means the mechanism's default; a sketch has none and says so."""
    sums = mechanism.new_sums()
    sums.add_many(mechanism.privatize_many(list(case.values) * 10, np.random.default_rng(5)))
    inner = mechanism.permanent if isinstance(mechanism, Longitudinal) else mechanism
    knows_domain = getattr(mechanism, "domain", None) is not None  # LOLOHA: a grr domain
    if isinstance(inner, Sketch | HeavyHitters) and not knows_domain:  # no domain to default to
        for call in (lambda: mechanism.estimate(sums), lambda: mechanism.estimate(sums, None)):
            with pytest.raises(ParameterError, match=f"^{mechanism.name} needs candidates"):
                call()
        return
    default = mechanism.estimate(sums, None, level=0.5)
    expected = case.values if case.default_queries is None else case.default_queries
    assert default.values == expected and default.level == 0.5
    given = mechanism.estimate(sums, list(expected), level=0.5)
    assert np.array_equal(default.estimate, given.estimate)
    assert np.array_equal(default.std_error, given.std_error)


def check_output_probability_is_positive(case: Case, mechanism: Any) -> None:
    for value in case.values:
        assert min(mechanism.output_probability(value, o) for o in all_outputs(mechanism)) > 0


def check_derived_integers_are_published(case: Case, mechanism: Any) -> None:
    """PROTOCOL.md §1.3: every integer a device uses, as JSON integers below 2^32."""
    derived = mechanism.derived()
    assert derived and all(isinstance(name, str) for name in derived)
    for value in derived.values():
        for number in value if isinstance(value, list) else [value]:
            assert type(number) is int and 0 <= number < 2**32


CHECKS: list[Callable[..., None]] = [
    check_parameters,
    check_seeded_runs_repeat,
    check_privatize_matches_output_probability,
    check_privatize_many_matches_output_probability,
    check_default_rng_matches_output_probability,
    check_estimates_are_well_formed,
    check_empty_sums_estimate_zero,
    check_output_probability_is_positive,
    check_stack_rebuilds_privatize_many_batches,
    check_estimate_without_candidates,
    check_derived_integers_are_published,
]


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("case", conformance_cases(), ids=str)
def test_mechanism_conforms(
    case: Case, check: Callable[..., None], monkeypatch: pytest.MonkeyPatch
) -> None:
    mechanism = case.build()
    if "monkeypatch" in check.__code__.co_varnames[: check.__code__.co_argcount]:
        check(case, mechanism, monkeypatch)
    else:
        check(case, mechanism)


def test_every_mechanism_has_a_conformance_case() -> None:
    names = [c.name for c in conformance_cases()]
    assert sorted(n for n in names if "-" not in n) == sorted(MECHANISMS)
    assert sorted(n for n in names if n.endswith("-longitudinal")) == [
        f"{name}-longitudinal" for name in ("cms", "grr", "hcms", "rr")
    ]
    assert [n for n in names if n.endswith("-loloha")] == ["grr-loloha"]


@pytest.mark.parametrize(
    ("case", "impossible"),
    [
        (conformance_cases()[0], [2, -1]),
        (conformance_cases()[1], [4, -1, True]),
        (
            conformance_cases()[2],
            [
                SketchReport(3, b"\x00"),
                SketchReport(-1, b"\x00"),
                SketchReport(0, b"\x00\x00"),
                SketchReport(0, b""),
                SketchReport(0, b"\x04"),
            ],
        ),  # k=3, m=5: padding bit set
        (
            conformance_cases()[3],
            [
                HadamardReport(2, 0, 1),
                HadamardReport(0, 4, 0),
                HadamardReport(0, 1, 2),
                HadamardReport(-1, 0, 0),
            ],
        ),
    ],
    ids=["rr", "grr", "cms", "hcms"],
)
def test_reports_never_sent_have_probability_zero(case: Case, impossible: list[Any]) -> None:
    # Regression: rr gave P(report=2) = P(report=0) and grr gave an out-of-range index the
    # lie probability, so an enumeration with a wrong output space looked plausible.
    mechanism = case.build()
    for report in impossible:
        assert mechanism.output_probability(case.values[0], report) == 0
