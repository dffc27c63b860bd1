"""The coverage experiment: every kind covered, its summaries right, seeded runs honest."""

from __future__ import annotations

import numpy as np
import pytest

from ldp_telemetry.shared.mechanisms.registry import MECHANISMS, params_class
from simulations.coverage import experiment as coverage
from simulations.coverage.cases import REPEATS, cases


def test_every_registered_kind_and_longitudinal_variant_has_cases() -> None:
    found = {(c.kind, c.repeats) for c in cases(500, np.random.default_rng(1))}
    kinds = {kind for kind, _ in found}
    assert set(MECHANISMS) <= kinds
    for name in MECHANISMS:
        if "longitudinal" in params_class(name).fields():
            assert (f"{name}+longitudinal", 1) in found
            assert (f"{name}+longitudinal ×{REPEATS} buckets", REPEATS) in found
    populations = {c.population for c in cases(500, np.random.default_rng(1)) if c.numeric}
    assert populations == {"uniform", "lognormal", "bimodal", "point mass", "clipped 5%+5%"}


def test_summaries_of_known_errors() -> None:
    """Estimates N(truth, 1) with SE 1 cover 95 %; with SE 0.5 about 68 %, SE/SD 0.5."""
    rng = np.random.default_rng(3)
    estimate = rng.normal(10.0, 1.0, (4000, 2))
    for se, expected in ((1.0, 0.95), (0.5, 0.683)):
        s = np.full_like(estimate, se)
        runs = coverage.Runs(
            ["a", "b"],
            estimate,
            s,
            estimate - 1.959964 * s,
            estimate + 1.959964 * s,
            np.zeros(estimate.shape, bool),
            np.full(estimate.shape, 10.0),
        )
        row = coverage.summarize(runs, [0, 1])
        assert row["coverage"] == pytest.approx(expected, abs=0.01)
        assert row["se_over_sd"] == pytest.approx(se, rel=0.03)
        assert abs(row["mean_z"]) < 0.05 / se
        assert row["ok"] == ("yes" if se == 1.0 else "NO")
    shifted = estimate[:, :1] + 0.5  # half an SE too high, SE 1
    biased = coverage.Runs(
        ["a"],
        shifted,
        np.ones_like(shifted),
        shifted - 1.959964,
        shifted + 1.959964,
        np.zeros(shifted.shape, bool),
        np.full(shifted.shape, 10.0),
    )
    row = coverage.summarize(biased, [0])
    assert row["worst_z"] == pytest.approx(0.5, abs=0.05) and row["ok"] == "NO"


@pytest.mark.parametrize("kind", ["rr", "grr", "oue", "ss", "olh", "hh", "cms+longitudinal"])
def test_seeded_small_runs_of_the_count_kinds_are_honest(kind: str) -> None:
    """200 runs at 2,000 devices: coverage, bias and SE/SD near the targets (seeded)."""
    rng = np.random.default_rng(11)
    case = next(
        c for c in cases(2_000, rng) if c.kind == kind and c.population in ("zipf", "p=0.05")
    )
    runs = coverage.run_case(case, 200, rng)
    row = coverage.summarize(runs, range(len(runs.names)))
    # 200 runs pooled over the answers: the coverage's SE is under 1.5 points.
    assert 0.91 <= row["coverage"] <= 0.99, row
    assert row["worst_z"] < 0.35, row
    assert 0.85 <= row["se_over_sd"] <= 1.2, row


def test_a_seeded_small_run_of_the_one_bit_mean_is_honest() -> None:
    """200 runs, devices drawn afresh each run: at ε = 4 the SE once counted a sample's
    spread while the truth was one fixed population's mean (SE/SD 1.36)."""
    rng = np.random.default_rng(17)
    case = next(
        c
        for c in cases(2_000, rng)
        if c.kind == "numeric" and c.setting.startswith("1bit ε=4") and c.population == "uniform"
    )
    assert case.draw is not None
    runs = coverage.run_case(case, 200, rng)
    row = coverage.summarize(runs, [0])
    assert 0.91 <= row["coverage"] <= 0.99, row
    assert row["worst_z"] < 0.3, row
    assert 0.85 <= row["se_over_sd"] <= 1.15, row


def test_a_discovery_is_judged_on_the_coverage_of_its_reliable_rows() -> None:
    rng = np.random.default_rng(13)
    case = next(c for c in cases(2_000, rng) if c.discover and c.population == "bimodal")
    assert case.kind == "hh discover"
    runs = coverage.run_case(case, 30, rng)
    assert runs.selected and runs.truth.shape == runs.estimate.shape == (30, case.discover)
    row = coverage.summarize(runs, range(case.discover))
    assert row["se_over_sd"] is None and row["worst_z"] is None  # shown as a dash
    assert row["unreliable"] < 1.0 and row["reliable_coverage"] >= 0.85, row
    assert row["ok"] in ("yes", "≈")


@pytest.mark.parametrize(
    ("kind", "population", "devices"),
    [
        # Collisions of values nobody asked about: g = 3 buckets per row at ε = 1, k = 64.
        ("olh", "uniform", 10_000),
        # Reports sharing a permanent response: the instantaneous noise is fresh per bucket.
        (f"rr+longitudinal ×{REPEATS} buckets", "p=0.05", 2_000),
        (f"cms+longitudinal ×{REPEATS} buckets", "point mass", 2_000),
    ],
)
def test_seeded_runs_that_once_missed_are_honest(kind: str, population: str, devices: int) -> None:
    """150 seeded runs: olh's SE once left out the collisions of values not asked (SE/SD
    0.75), and the longitudinal SEs over buckets were widened by √B (SE/SD 1.2 to 2)."""
    rng = np.random.default_rng(29)
    case = next(c for c in cases(devices, rng) if c.kind == kind and c.population == population)
    runs = coverage.run_case(case, 150, rng)
    row = coverage.summarize(runs, range(len(runs.names)))
    assert 0.91 <= row["coverage"] <= 0.985, row
    assert row["worst_z"] < 0.35, row
    assert 0.88 <= row["se_over_sd"] <= 1.12, row


def test_compute_can_run_one_kinds_cases_alone() -> None:
    sizes = coverage.Sizes(devices=300, reps=3, costly_reps=2)
    rows = coverage.compute(sizes, np.random.default_rng(5), False, kinds=("rr",))
    assert {row["kind"] for row in rows} == {"rr"} and len(rows) == 6


def test_loloha_and_the_longitudinal_mean_have_honest_intervals() -> None:
    """Seeded small runs of the new longitudinal answers: LOLOHA's counts over 5 buckets and
    the longitudinal one-bit mean's pooled mean."""
    rng = np.random.default_rng(23)
    made = cases(2_000, rng)
    found = {(c.kind, c.repeats) for c in made}
    assert {("grr+loloha", 1), ("grr+loloha ×5 buckets", 5)} <= found
    assert {("numeric+longitudinal", 1), ("numeric+longitudinal ×5 buckets", 5)} <= found
    for kind, population in (
        ("grr+loloha ×5 buckets", "zipf"),
        ("numeric+longitudinal", "uniform"),
    ):
        case = next(c for c in made if c.kind == kind and c.population == population)
        runs = coverage.run_case(case, 80, rng)
        row = coverage.summarize(runs, list(range(len(runs.names))))
        assert 0.9 <= row["coverage"] <= 1.0, (kind, row)
        assert row["worst_z"] < 0.45, (kind, row)
