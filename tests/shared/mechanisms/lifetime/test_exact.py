"""LOLOHA's exact estimator over its public family: unbiased by enumeration (the expected
cells give back the counts exactly), its closed-form variance enumerated for one device and
against a seeded Monte Carlo, one report's reach, and OLH's estimator where the family cannot
tell the values apart."""

from __future__ import annotations

import pickle
from fractions import Fraction
from typing import Any, cast

import numpy as np
import pytest

from ldp_telemetry.shared import TaskConfig
from ldp_telemetry.shared.mechanisms.lifetime.loloha import LocalHashingLongitudinal
from ldp_telemetry.shared.mechanisms.lifetime.spec import MIN_SEEDS, default_seeds

DOMAIN = [f"v{i}" for i in range(6)]


def loloha(domain: list[str] = DOMAIN, **option: Any) -> LocalHashingLongitudinal:
    layer: dict[str, Any] = {"variant": "loloha", "epsilon_inf": 2.0, "epsilon_1": 1.0}
    layer.update({"hash_seed": 11, **option})
    task = TaskConfig.create(task_id="screens", mechanism="grr", domain=domain, longitudinal=layer)
    return cast(LocalHashingLongitudinal, task.mechanism_object)


def cell_probabilities(mechanism: LocalHashingLongitudinal, value: int) -> list[list[Fraction]]:
    """Return P(report = (row j, bucket y)) of one report of a value, exactly."""
    channel: Any = mechanism.instant
    assert mechanism.family.exact  # the family's buckets are built when it is
    buckets = mechanism.family.buckets
    share = Fraction(1, mechanism.seeds)
    return [
        [
            share * (channel.keep if buckets[j, value] == y else channel.other)
            for y in range(mechanism.g)
        ]
        for j in range(mechanism.seeds)
    ]


def expected_table(mechanism: LocalHashingLongitudinal, counts: list[int]) -> np.ndarray:
    """Return E[C[j, y]] for the counts, computed in exact fractions."""
    total = [[Fraction(0)] * mechanism.g for _ in range(mechanism.seeds)]
    for value, count in enumerate(counts):
        for j, row in enumerate(cell_probabilities(mechanism, value)):
            for y, probability in enumerate(row):
                total[j][y] += count * probability
    return np.array([[float(cell) for cell in row] for row in total])


@pytest.mark.parametrize(("g", "seeds"), [(2, 5), (2, 8), (3, 4), (4, 3)])
def test_the_expected_cells_give_back_the_counts_exactly(g: int, seeds: int) -> None:
    """Few rows, collisions everywhere: OLH's estimator is off, the exact solve is not."""
    mechanism = loloha(g=g, seeds=seeds)
    assert mechanism.family.exact
    counts = [700, 0, 120, 55, 1, 4_000]
    table = expected_table(mechanism, counts)
    channel: Any = mechanism.instant
    solved = mechanism.family.estimate(table, sum(counts), channel.p, channel.q)
    assert solved == pytest.approx(counts, abs=1e-7)
    olh = channel.debias(mechanism.family.gathered(table), sum(counts))
    assert np.max(np.abs(olh - np.array(counts))) > 50  # the collision bias it removes


def test_one_devices_variance_is_the_enumerated_one() -> None:
    """Var f̂ of a single device holding each value, over its row and its report, exactly."""
    mechanism = loloha(g=3, seeds=4, epsilon_inf=2.5, epsilon_1=1.2)
    channel: Any = mechanism.instant
    chosen = np.arange(len(DOMAIN))
    for value in range(len(DOMAIN)):
        moves, probabilities = [], []
        for j, row in enumerate(cell_probabilities(mechanism, value)):
            for y, probability in enumerate(row):
                table = np.zeros((mechanism.seeds, mechanism.g))
                table[j, y] = 1
                moves.append(mechanism.family.estimate(table, 1, channel.p, channel.q))
                probabilities.append(float(probability))
        found = np.array(moves)
        weights = np.array(probabilities)
        mean = weights @ found
        assert mean == pytest.approx(np.eye(len(DOMAIN))[value], abs=1e-9)  # unbiased
        enumerated = weights @ (found - mean) ** 2
        counts = np.eye(len(DOMAIN))[value]
        closed = mechanism.family.variance(counts, 1, chosen, channel.p, channel.q)
        assert closed == pytest.approx(enumerated, rel=1e-9)
        reach = mechanism.reach()
        low, high = float(found.min()), float(found.max())
        assert reach.low <= low + 1e-9 and high <= reach.high + 1e-9


def test_reach_is_the_largest_move_of_one_report() -> None:
    mechanism = loloha(g=2, seeds=6)
    assert mechanism.family.exact
    channel: Any = mechanism.instant
    moves = []
    for j in range(mechanism.seeds):
        for y in range(mechanism.g):
            table = np.zeros((mechanism.seeds, mechanism.g))
            table[j, y] = 1
            moves.append(mechanism.family.estimate(table, 1, channel.p, channel.q))
    reach = mechanism.reach()
    assert (reach.low, reach.high) == pytest.approx((np.min(moves), np.max(moves)), rel=1e-9)


def test_the_variance_against_a_seeded_monte_carlo() -> None:
    """300 populations of fresh devices (rows drawn uniformly) over 8 rows, g = 2."""
    mechanism = loloha(g=2, seeds=8, hash_seed=5)
    counts = [900, 0, 300, 60, 40, 700]
    truth = [DOMAIN[v] for v, count in enumerate(counts) for _ in range(count)]
    rng = np.random.default_rng(2026)
    found, claimed = [], []
    for _ in range(300):
        sums = mechanism.new_sums()
        sums.add_many(mechanism.privatize_many(truth, rng))
        estimates = mechanism.estimate(sums)
        found.append(estimates.estimate)
        claimed.append(estimates.std_error)
    found_array = np.array(found)
    channel: Any = mechanism.instant
    exact_sd = np.sqrt(
        mechanism.family.variance(
            np.array(counts, float), len(truth), np.arange(6), channel.p, channel.q
        )
    )
    assert np.all(np.abs(found_array.mean(axis=0) - counts) < 4 * exact_sd / np.sqrt(300))
    assert found_array.std(axis=0) == pytest.approx(exact_sd, rel=0.15)
    assert np.mean(claimed, axis=0) == pytest.approx(exact_sd, rel=0.1)  # plug-in SE


def test_a_family_that_cannot_tell_the_values_apart_answers_with_olh() -> None:
    """F(g − 1) + 1 < d: no estimator is unbiased for every population; OLH's answers."""
    mechanism = loloha(domain=[f"v{i}" for i in range(12)], g=2, seeds=8)
    assert not mechanism.family.exact
    sums = mechanism.new_sums()
    sums.add_many(mechanism.privatize_many(["v1"] * 500, np.random.default_rng(1)))
    exact = mechanism.estimate(sums)
    olh = mechanism.instant.estimate(sums, [f"v{i}" for i in range(12)])
    assert np.array_equal(exact.estimate, olh.estimate)


def test_over_buckets_adds_the_permanent_layers_exact_variance() -> None:
    mechanism = loloha(g=2, seeds=8)
    sums = mechanism.new_sums()
    sums.add_many(mechanism.privatize_many(["v1"] * 400 + ["v2"] * 100, np.random.default_rng(3)))
    one = mechanism.estimate(sums, ["v1", "v2"])
    three = mechanism.over_buckets(one, 3)
    permanent: Any = mechanism.permanent
    counts = np.zeros(6)
    counts[[1, 2]] = np.clip(one.estimate, 0, 500)
    counts[[0, 3, 4, 5]] = max(0.0, 500 - counts.sum()) / 4
    shared = mechanism.family.variance(counts, 500, np.array([1, 2]), permanent.p, permanent.q)
    assert three.std_error**2 == pytest.approx(one.std_error**2 + 2 * shared)
    assert np.all(three.std_error > one.std_error)


def test_the_default_family_is_one_and_a_half_rows_per_value_per_bucket() -> None:
    assert (default_seeds(100, 4), default_seeds(100, 2)) == (50, 149)
    assert default_seeds(6, 2) == MIN_SEEDS  # small domains: far from all-row collisions
    assert default_seeds(4096, 2) == 6143  # beyond the exact solve's budget: OLH answers


@pytest.mark.parametrize(("size", "g"), [(3, 2), (6, 4), (100, 2), (100, "optimal"), (300, 3)])
def test_the_default_family_tells_the_values_apart(size: int, g: Any) -> None:
    mechanism = loloha(domain=[f"v{i}" for i in range(size)], g=g)
    assert mechanism.seeds == default_seeds(size, mechanism.g)
    assert mechanism.family.exact


def test_a_pickled_mechanism_answers_alike() -> None:
    mechanism = loloha(g=2, seeds=8)
    sums = mechanism.new_sums()
    sums.add_many(mechanism.privatize_many(["v1"] * 300, np.random.default_rng(4)))
    before = mechanism.estimate(sums)
    again = pickle.loads(pickle.dumps(mechanism))
    assert np.array_equal(again.estimate(sums).std_error, before.std_error)
