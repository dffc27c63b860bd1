"""Binary randomized response specifics: the seeds' numbers, thresholds and the estimator."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from ldp_telemetry.shared import RandomizedResponse, ValueOutOfDomain
from ldp_telemetry.shared.mechanisms.rr import check_answer

SCALE = 2**32


def test_seeds_alpha_beta_half_is_ln3_with_exact_thresholds() -> None:
    rr = RandomizedResponse(alpha=0.5, beta=0.5)
    assert rr.epsilon == rr.effective_epsilon == math.log(3)
    assert (rr.threshold_yes, rr.threshold_no) == (3 * SCALE // 4, SCALE // 4)
    assert (rr.p11, rr.p10) == (0.75, 0.25)


def test_seeds_400_yes_of_1000_estimate_30_percent() -> None:
    rr = RandomizedResponse(alpha=0.5, beta=0.5)
    sums = rr.new_sums()
    for answer in [True] * 400 + [False] * 600:
        sums.add(int(answer))
    estimates = rr.estimate(sums)
    assert estimates.values == (True, False) and estimates.n == 1000
    assert estimates.estimate.tolist() == [300.0, 700.0]
    assert estimates.proportions().estimate[0] == 0.3


def test_epsilon_construction_keeps_the_truth_with_e_eps_over_1_plus_e_eps() -> None:
    rr = RandomizedResponse(epsilon=2.0)
    keep = math.exp(2.0) / (1 + math.exp(2.0))
    assert rr.threshold_yes + rr.threshold_no == SCALE  # beta = 1/2: symmetric lie
    assert rr.p11 <= keep < rr.p11 + 1 / SCALE  # rounded towards privacy, by < 1 step
    assert rr.alpha is None and rr.beta is None


@pytest.mark.parametrize(("alpha", "beta"), [(0.3, 0.8), (0.9, 0.1), (0.25, 0.6)])
def test_alpha_beta_probabilities_are_rounded_towards_privacy(alpha: float, beta: float) -> None:
    rr = RandomizedResponse(alpha=alpha, beta=beta)
    p11, p10 = alpha + (1 - alpha) * beta, (1 - alpha) * beta
    assert p11 - 1e-9 < rr.p11 <= p11 + 1e-15 and p10 - 1e-15 <= rr.p10 < p10 + 1e-9
    expected = max(math.log(p11 / p10), math.log((1 - p10) / (1 - p11)))
    assert rr.epsilon == pytest.approx(expected, rel=1e-12)


def test_estimate_inverts_the_answer_probabilities() -> None:
    rr = RandomizedResponse(alpha=0.3, beta=0.8)
    sums = rr.new_sums()
    sums.add_many(np.array([1] * 700 + [0] * 300))
    yes = (700 - 1000 * rr.p10) / (rr.p11 - rr.p10)
    estimates = rr.estimate(sums, candidates=[False, True])
    assert estimates.estimate.tolist() == pytest.approx([1000 - yes, yes], rel=1e-12)
    assert estimates.std_error[0] == estimates.std_error[1] > 0


def test_privatize_many_accepts_bool_and_zero_one_inputs() -> None:
    rr = RandomizedResponse(epsilon=20.0)  # lies with probability ~2e-9
    rng = np.random.default_rng(0)
    truth = np.array([True, False] * 50)
    assert np.array_equal(rr.privatize_many(truth, rng), truth.astype(np.uint8))
    zero_one: list[Any] = [1, 0, True, False]
    assert rr.privatize_many(zero_one, rng).tolist() == [1, 0, 1, 0]
    assert rr.privatize_many([], rng).shape == (0,)
    answers: tuple[Any, ...] = (True, False, 1, 0, np.bool_(True))
    assert [rr.privatize(v, rng) for v in answers] == [1, 0, 1, 0, 1]


@pytest.mark.parametrize(
    "answer", [True, False, 1, 0, np.bool_(False), np.int64(1), np.uint8(0), np.int32(1)]
)
def test_check_answer_takes_bools_and_zero_one_integers_of_any_kind(answer: Any) -> None:
    assert check_answer(answer) is bool(answer)
    rr = RandomizedResponse(epsilon=20.0)  # privatize accepts exactly what check_answer does
    assert rr.privatize(answer, np.random.default_rng(0)) == int(bool(answer))


@pytest.mark.parametrize("answer", [2, -1, np.int64(2), 1.0, "1", None, b"\x01"])
def test_check_answer_refuses_what_privatize_refuses(answer: Any) -> None:
    with pytest.raises(ValueOutOfDomain, match="randomized response takes a bool"):
        check_answer(answer)
    with pytest.raises(ValueOutOfDomain):
        RandomizedResponse(epsilon=1.0).privatize(answer)


def test_stack_gives_the_uint8_batch_add_many_takes() -> None:
    rr = RandomizedResponse(epsilon=1.0)
    batch = rr.stack([1, 0, 0, 1, 1])
    assert batch.dtype == np.uint8 and batch.tolist() == [1, 0, 0, 1, 1]
    sums = rr.new_sums()
    sums.add_many(batch)
    assert (sums.total, int(sums.table[0, 0])) == (5, 3)


def test_estimate_without_candidates_is_yes_then_no() -> None:
    rr = RandomizedResponse(alpha=0.5, beta=0.5)
    sums = rr.new_sums()
    sums.add_many(np.array([1] * 400 + [0] * 600))
    for estimates in (rr.estimate(sums), rr.estimate(sums, None)):
        assert estimates.values == (True, False)
        assert estimates.estimate.tolist() == [300.0, 700.0]
