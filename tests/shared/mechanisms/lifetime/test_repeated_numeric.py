"""A longitudinal one-bit mean: a permanent bit per bucket, re-randomized per report."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, cast

import numpy as np
import pytest

from ldp_telemetry.client import Client, InMemoryTransport
from ldp_telemetry.shared import ParameterError, TaskConfig
from ldp_telemetry.shared.mechanisms.longitudinal import Longitudinal
from ldp_telemetry.shared.randomness import SCALE
from tests.shared.cases import all_outputs, fraction_log, worst_case_ratio

LAYER = {"epsilon_inf": 2.0, "epsilon_1": 1.0}


def task(buckets: int = 8, layer: dict[str, float] | None = None) -> TaskConfig:
    return TaskConfig.create(
        task_id="minutes",
        mechanism="numeric",
        method="1bit",
        lo=0.0,
        hi=80.0,
        buckets=buckets,
        longitudinal={**LAYER, **(layer or {})},
    )


VALUES = [0.0, 15.0, 33.0, 47.0, 80.0]  # the extreme buckets and some between


@pytest.mark.parametrize("layer", [{}, {"epsilon_1": 0.3}, {"epsilon_inf": 4.0, "epsilon_1": 2.5}])
def test_one_report_spends_exactly_epsilon_1_and_a_bucket_epsilon_inf(
    layer: dict[str, float],
) -> None:
    mechanism = cast(Longitudinal, task(layer=layer).mechanism_object)
    ratio = worst_case_ratio(mechanism, VALUES)
    assert math.isclose(float(ratio), math.exp(mechanism.effective_epsilon), rel_tol=1e-12)
    permanent = worst_case_ratio(mechanism.permanent, VALUES)
    assert math.isclose(fraction_log(permanent), mechanism.effective_epsilon_inf, rel_tol=1e-12)
    assert mechanism.effective_epsilon <= mechanism.epsilon < mechanism.effective_epsilon_inf
    one_less = cast(Any, mechanism.permanent).compose_flip(mechanism.threshold - 1)
    assert one_less.effective_epsilon > mechanism.epsilon  # the least noise that meets ε₁


def test_the_composition_is_the_two_layers_enumerated() -> None:
    mechanism = cast(Longitudinal, task().mechanism_object)
    flip = Fraction(mechanism.threshold, SCALE)
    for value in VALUES:
        for report in all_outputs(mechanism):
            composed = sum(
                mechanism.permanent.output_probability(value, prr)
                * (flip if prr != report else 1 - flip)
                for prr in (0, 1)
            )
            assert mechanism.output_probability(value, report) == composed


def test_the_task_is_protocol_1_1_and_other_numeric_tasks_are_not() -> None:
    served = task().to_dict()
    assert served["protocol"] == "1.1" and set(served["derived"]) == {"L", "S", "T_i"}
    plain = TaskConfig.create(task_id="p", mechanism="numeric", epsilon=1.0, lo=0.0, hi=1.0)
    assert plain.to_dict()["protocol"] == "1.0" and "longitudinal" not in plain.to_dict()
    assert TaskConfig.from_dict(served).fingerprint == task().fingerprint


def test_sw_and_epsilon_beside_it_are_refused() -> None:
    with pytest.raises(ParameterError, match="takes method 1bit"):
        TaskConfig.create(task_id="t", mechanism="numeric", lo=0, hi=1, longitudinal=LAYER)
    with pytest.raises(ParameterError, match="leave epsilon out"):
        TaskConfig.create(
            task_id="t",
            mechanism="numeric",
            method="1bit",
            lo=0,
            hi=1,
            epsilon=1.0,
            longitudinal=LAYER,
        )


def test_a_drifting_populations_daily_means_fall_in_their_intervals() -> None:
    """2,000 devices for 40 days, each drifting up by a bucket every ~10 days: each day's
    interval covers that day's true mean (of the bucket centers), and so does the pooled
    interval over all days (over_buckets: the devices' permanent bits are shared)."""
    mechanism = cast(Longitudinal, task(buckets=64).mechanism_object)
    permanent: Any = mechanism.permanent
    rng = np.random.default_rng(11)
    devices, days = 2_000, 40
    start = rng.integers(0, 40, devices)
    speed = rng.integers(8, 13, devices)
    centers = (np.arange(64) + 0.5) / 64 * 80.0
    bits = np.stack([permanent.privatize_many(np.full(devices, c), rng) for c in centers], 1)
    covered, pooled, truths = 0, mechanism.new_sums(), []
    for day in range(days):
        bucket = np.minimum(start + day // speed, 63)
        reports = permanent.reflip_many(bits[np.arange(devices), bucket], mechanism.threshold, rng)
        sums = mechanism.new_sums()
        sums.add_many(reports)
        pooled.add_many(reports)
        answer = mechanism.estimate(sums)
        truth = float(centers[bucket].mean())
        truths.append(truth)
        covered += bool(answer.ci_low[0] <= truth <= answer.ci_high[0])
    assert covered >= 36  # 95 % of 40 days: 38 expected; seeded
    over = mechanism.over_buckets(mechanism.estimate(pooled), days)
    assert over.ci_low[0] <= float(np.mean(truths)) <= over.ci_high[0]
    assert over.std_error[0] > mechanism.estimate(pooled).std_error[0]


def test_a_devices_lifetime_epsilon_is_its_distinct_buckets_times_epsilon_inf() -> None:
    served = task(buckets=8)
    epsilon_inf = served.to_dict()["effective_epsilon_inf"]
    day = [1_764_028_800.0]
    client = Client(
        "memory://",
        transport=InMemoryTransport([served]),
        tasks=[served],
        clock=lambda: day[0],
        atexit_timeout=None,
    )
    minutes = [1.0, 3.0, 12.0, 14.0, 9.0, 25.0, 2.0, 79.0, 80.0, 70.0]  # buckets of width 10
    for value in minutes:
        assert client.record("minutes", value)
        day[0] += 86_400
    distinct = len({min(int(m // 10), 7) for m in minutes})
    stats = client.stats()
    assert stats.permanent_responses["minutes"] == distinct == 4
    assert stats.epsilon_inf["minutes"] == pytest.approx(distinct * epsilon_inf)
    client.close(5)
