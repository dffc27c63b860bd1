"""The lifetime block of a shuffled answer: one batch per bucket, the bucket's weakest, and
beyond 16 distinct sizes each rounded down to the grid (never up: ε falls as n grows); none
for a longitudinal task."""

from __future__ import annotations

from typing import Any

import pytest

from ldp_telemetry.aggregator.core.analysis.central import (
    GRID,
    Shuffle,
    batch_floor,
    central_fields,
)
from ldp_telemetry.aggregator.core.analysis.query import Window
from ldp_telemetry.aggregator.store import ShuffledWindow
from ldp_telemetry.shared import TaskConfig
from ldp_telemetry.shared.shuffling.accountant import central_epsilon
from ldp_telemetry.shared.shuffling.amplification import reduction_of
from ldp_telemetry.shared.shuffling.composition import compose
from tests.aggregator.store.cases import kind_task

DAY = 86_400


class Batches:
    """A source holding only shuffled batches (the store's answer, made by hand)."""

    def __init__(self, window: ShuffledWindow) -> None:
        self.window = window

    def shuffled_window(self, task: Any, start: Any, end: Any) -> ShuffledWindow:
        return self.window


def answer(sizes: list[int], buckets: list[int], task: TaskConfig | None = None) -> Any:
    task = kind_task("rr") if task is None else task
    window = ShuffledWindow(
        len(sizes), min(sizes), sum(sizes), tuple({0: n} for n in sizes), tuple(buckets),
        tuple(sizes),
    )  # fmt: skip
    shuffle = Shuffle(task, Batches(window), Window(), sum(sizes), held=[0])  # slice 0 holds them
    return task, central_fields(shuffle, sum(sizes))


def test_one_batch_per_bucket_the_buckets_weakest() -> None:
    task, body = answer([900, 400, 700, 800], [0, 0, DAY, 2 * DAY])
    reduction = reduction_of(task.mechanism_object)
    epsilons = [central_epsilon(reduction, n, 1e-8) for n in (400, 700, 800)]
    lifetime = body["lifetime"]
    assert (lifetime["batches"], lifetime["delta"]) == (3, pytest.approx(6e-8, rel=1e-12))
    assert lifetime["epsilon"] == compose([(e, 1e-8) for e in epsilons], lifetime["delta"])
    assert lifetime["naive_epsilon"] == pytest.approx(sum(epsilons), rel=1e-12)
    assert body["central_epsilon"] == epsilons[0] and body["smallest_batch"] == 400


def test_one_bucket_is_the_answers_own_central_epsilon() -> None:
    _, body = answer([500], [0])
    assert body["lifetime"]["epsilon"] == body["central_epsilon"]
    assert body["lifetime"]["naive_epsilon"] == body["central_epsilon"]


def test_many_distinct_sizes_are_rounded_down_to_the_grid() -> None:
    sizes = [1000 + 7 * day for day in range(20)]  # 20 distinct sizes, one a day
    task, body = answer(sizes, [day * DAY for day in range(20)])
    reduction = reduction_of(task.mechanism_object)
    floors = [batch_floor(n) for n in sizes]
    assert all(n / 2 ** (1 / GRID) - 1 <= f <= n for n, f in zip(sizes, floors, strict=True))
    assert len(set(floors)) < len(sizes)
    epsilons = [central_epsilon(reduction, n, 1e-8) for n in floors]
    exact = [central_epsilon(reduction, n, 1e-8) for n in sizes]
    assert body["lifetime"]["naive_epsilon"] == pytest.approx(sum(epsilons), rel=1e-12)
    # rounding down only errs towards privacy, by about 1% here
    assert sum(exact) < body["lifetime"]["naive_epsilon"] < 1.02 * sum(exact)
    assert batch_floor(1) == 1 and batch_floor(2) == 2 and batch_floor(10**6) <= 10**6


def test_a_longitudinal_task_gets_no_composition() -> None:
    # its days re-randomize one permanent response: not independent mechanisms of the value
    layers = {"epsilon_inf": 2.0, "epsilon_1": 1.0}
    task = TaskConfig.create(task_id="lt", mechanism="rr", longitudinal=layers)
    _, body = answer([500, 600], [0, DAY], task)
    assert body["central_epsilon"] > 0 and "lifetime" not in body
