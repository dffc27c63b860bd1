"""Numeric tasks: exact privacy of both methods, the estimators against their truth."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from ldp_telemetry.shared import ParameterError, TaskConfig, ValueOutOfDomain
from ldp_telemetry.shared.mechanisms.numeric import estimate as est
from ldp_telemetry.shared.mechanisms.numeric import mechanism as numeric_module
from ldp_telemetry.shared.mechanisms.numeric.mechanism import OneBitMean, SquareWave
from ldp_telemetry.shared.randomness import SCALE
from tests.shared.cases import worst_case_ratio


def square_wave(epsilon: float, buckets: int, **extra: object) -> SquareWave:
    return SquareWave(
        epsilon=epsilon, lo=0.0, hi=float(buckets), buckets=buckets, scale="linear", **extra
    )


def one_per_bucket(buckets: int) -> list[float]:
    return [i + 0.5 for i in range(buckets)]


@pytest.mark.parametrize("epsilon", [0.3, 1.0, 2.0, 4.0, 8.0])
@pytest.mark.parametrize("buckets", [2, 5, 16])
def test_square_wave_is_exactly_epsilon_private(epsilon: float, buckets: int) -> None:
    mechanism = square_wave(epsilon, buckets)
    values = one_per_bucket(buckets)
    for value in values:  # a distribution over every output, exactly
        total = sum(mechanism.output_probability(value, o) for o in range(mechanism.outputs))
        assert total == 1
    worst = worst_case_ratio(mechanism, values)
    assert worst == Fraction(mechanism.near_words, mechanism.far_words)
    assert math.log(worst) == pytest.approx(mechanism.effective_epsilon, abs=1e-12)
    assert mechanism.effective_epsilon <= epsilon
    assert mechanism.effective_epsilon == pytest.approx(epsilon, abs=1e-6)


@pytest.mark.parametrize(
    ("epsilon", "buckets"),
    [(e, d) for e in (0.5, 1.0, 2.0, 4.0, 6.0) for d in (2, 4, 7, 33)] + [(4.0, 256)],
)
def test_one_bit_mean_is_exactly_epsilon_private(epsilon: float, buckets: int) -> None:
    mechanism = OneBitMean(
        epsilon=epsilon, lo=0.0, hi=float(buckets), buckets=buckets, scale="linear"
    )
    values = one_per_bucket(buckets)  # every input a device can send: the buckets' centres
    for value in values:
        assert sum(mechanism.output_probability(value, bit) for bit in (0, 1)) == 1
    worst = worst_case_ratio(mechanism, values)
    assert worst == Fraction(mechanism.high_words, mechanism.low_words)
    assert math.log(worst) == pytest.approx(mechanism.effective_epsilon, abs=1e-12)
    assert mechanism.effective_epsilon <= epsilon
    # the thresholds sit on the extreme buckets, so the whole epsilon is spent
    assert mechanism.effective_epsilon == pytest.approx(epsilon, abs=1e-6)


def test_square_wave_reports_follow_output_probability() -> None:
    mechanism = square_wave(1.0, 8)
    reports = mechanism.privatize_many([2.5] * 60_000, np.random.default_rng(3))
    observed = np.bincount(reports, minlength=mechanism.outputs)
    expected = [
        float(mechanism.output_probability(2.5, o)) * 60_000 for o in range(mechanism.outputs)
    ]
    assert stats.chisquare(observed, expected).pvalue > 1e-4
    single = [mechanism.privatize(2.5, np.random.default_rng(i)) for i in range(200)]
    assert all(0 <= r < mechanism.outputs for r in single)


def test_words_past_the_used_range_are_drawn_again(monkeypatch: pytest.MonkeyPatch) -> None:
    mechanism = square_wave(2.0, 16)
    assert mechanism.used_words < SCALE  # this configuration leaves spare words
    draws = iter([np.array([SCALE - 1, 0], dtype=np.uint32), np.array([5], dtype=np.uint32)])
    monkeypatch.setattr(numeric_module, "uniform_words", lambda size, rng=None: next(draws))
    reports = mechanism.privatize_many([0.5, 0.5])
    # the first word was past the used range: it was replaced by the next draw (5)
    expected = mechanism._from_words(np.array([0, 0]), np.array([5, 0]))
    assert reports.tolist() == expected.tolist()


def test_the_one_bit_mean_is_unbiased_with_its_closed_form_error() -> None:
    task = TaskConfig.create(
        task_id="m", mechanism="numeric", epsilon=1.0, lo=0, hi=100, method="1bit", buckets=100
    )
    mechanism = task.mechanism_object
    rng = np.random.default_rng(21)
    values = rng.uniform(10, 60, 5000)
    truth = float(np.mean(np.floor(values) + 0.5))  # what the buckets' centres average to
    z = []
    for _ in range(40):
        sums = mechanism.new_sums()
        sums.add_many(mechanism.privatize_many(values, rng))
        answer = mechanism.estimate(sums)
        z.append((answer.estimate[0] - truth) / answer.std_error[0])
    assert abs(np.mean(z)) < 0.45 and 0.7 < np.std(z) < 1.35


def test_square_wave_recovers_a_lognormal_and_its_errors_are_honest() -> None:
    task = TaskConfig.create(
        task_id="lat", mechanism="numeric", epsilon=3.0, lo=1, hi=5000, scale="log", buckets=64
    )
    mechanism = task.mechanism_object
    rng = np.random.default_rng(8)
    values = rng.lognormal(math.log(120), 0.8, 20_000)
    truth = {"p50": np.percentile(values, 50), "p90": np.percentile(values, 90)}
    answers = []
    for _ in range(12):
        sums = mechanism.new_sums()
        sums.add_many(mechanism.privatize_many(values, rng))
        answers.append(mechanism.estimate(sums, ["p50", "p90", "mean"]))
    for i, name in enumerate(("p50", "p90")):
        estimates = np.array([a.estimate[i] for a in answers])
        errors = np.array([a.std_error[i] for a in answers])
        assert abs(np.mean(estimates) / truth[name] - 1) < 0.05
        # the bootstrap's SE (full refits) against the spread over independent populations
        assert 0.6 < np.mean(errors) / np.std(estimates, ddof=1) < 1.6
    assert abs(np.mean([a.estimate[2] for a in answers]) / np.mean(values) - 1) < 0.08


@pytest.mark.parametrize(("epsilon", "buckets"), [(0.5, 5), (2.0, 16), (1.0, 64)])
def test_the_channel_is_the_exact_output_probability(epsilon: float, buckets: int) -> None:
    mechanism = square_wave(epsilon, buckets)
    exact = [
        [float(mechanism.output_probability(v, o)) for v in one_per_bucket(buckets)]
        for o in range(mechanism.outputs)
    ]
    assert np.allclose(mechanism.channel.dense(), exact, rtol=1e-12, atol=0)
    x = np.random.default_rng(1).dirichlet(np.ones(buckets), size=3)
    assert np.allclose(mechanism.channel.forward(x), x @ np.array(exact).T)


def test_the_linear_mean_and_end_buckets_are_unbiased_in_closed_form() -> None:
    mechanism = square_wave(1.0, 32)
    rng = np.random.default_rng(5)
    values = np.concatenate([rng.uniform(3, 20, 3000), np.full(500, -4.0), np.full(300, 0.2)])
    truth = {
        "mean": float(np.mean(np.floor(np.clip(values, 0, 31)) + 0.5)),  # the buckets' centres
        "first_bucket": 800 / len(values),
        "last_bucket": 0.0,
    }
    z: dict[str, list[float]] = {name: [] for name in truth}
    for _ in range(60):
        sums = mechanism.new_sums()
        sums.add_many(mechanism.privatize_many(values, rng))
        counts = sums.table[0]
        for name in truth:
            found = est.closed_form(mechanism.channel, counts, name, mechanism.to_value, True)
            assert found is not None
            z[name].append((found[0] - truth[name]) / found[1])
    for name, scores in z.items():
        assert abs(np.mean(scores)) < 0.4 and 0.75 < np.std(scores) < 1.3, name


def test_a_point_mass_tail_is_flagged_and_a_smooth_median_is_not() -> None:
    mechanism = square_wave(1.0, 64)
    sums = mechanism.new_sums()
    sums.add_many(mechanism.privatize_many(np.full(20_000, 32.0), np.random.default_rng(6)))
    rows = {row["value"]: row for row in mechanism.estimate(sums, ["p50", "p99"]).rows()}
    assert rows["p50"]["reliable"] is False and rows["p99"]["reliable"] is False
    smooth = mechanism.new_sums()
    values = np.random.default_rng(7).uniform(0, 64, 20_000)
    smooth.add_many(mechanism.privatize_many(values, np.random.default_rng(8)))
    answer = mechanism.estimate(smooth, ["p50"]).rows()[0]
    assert answer["reliable"] is True and "reason" not in answer
    assert answer["ci_low"] < np.median(values) < answer["ci_high"]


def test_histogram_rows_cover_the_range_and_count_the_reports() -> None:
    mechanism = square_wave(3.0, 32)
    sums = mechanism.new_sums()
    values = [8.5] * 3000 + [24.5] * 1000
    sums.add_many(mechanism.privatize_many(values, np.random.default_rng(2)))
    answer = mechanism.estimate(sums, ["histogram"])
    assert answer.values[0] == "[0, 1)" and answer.values[-1] == "[31, 32)"
    assert sum(answer.estimate) == pytest.approx(4000)
    assert abs(int(np.argmax(answer.estimate)) - 8) <= 1
    assert 2400 < sum(answer.estimate[4:13]) < 3600 and 700 < sum(answer.estimate[20:29]) < 1300


def test_values_are_clipped_to_the_range_and_checked() -> None:
    mechanism = square_wave(1.0, 4)
    assert mechanism.bucket_of(-5) == 0 and mechanism.bucket_of(99) == 3
    assert mechanism.canonical(4.0) == (3).to_bytes(4, "big")
    for bad in ("7", True, float("nan"), None):
        with pytest.raises(ValueOutOfDomain):
            mechanism.bucket_of(bad)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"lo": 5, "hi": 5}, "lo must be below hi"),
        ({"lo": 0, "hi": 10, "scale": "log"}, "scale log needs lo > 0"),
        ({"lo": 0, "hi": 10, "scale": "cubic"}, "scale must be one of"),
        ({"lo": 0, "hi": 10, "method": "piecewise"}, "method must be one of"),
        ({"lo": 1, "hi": 10, "scale": "log", "method": "1bit"}, "use scale linear"),
        ({"lo": 0, "hi": 10, "buckets": 1}, "buckets"),
        ({"hi": 10}, "numeric needs lo"),
        ({"lo": 0, "hi": float("inf")}, "finite"),
    ],
)
def test_bad_parameters_say_the_fix(params: dict[str, object], message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        TaskConfig.create(task_id="x", mechanism="numeric", epsilon=1.0, **params)


def test_queries_name_what_each_method_answers() -> None:
    sw = square_wave(1.0, 4)
    assert sw.parse_candidates(None) is None
    assert sw.parse_candidates(["mean", "p99.9", "histogram"]) == ["mean", "p99.9", "histogram"]
    with pytest.raises(ParameterError, match="unknown statistic"):
        sw.parse_candidates(["median"])
    with pytest.raises(ParameterError, match="clipped_low is now first_bucket"):
        sw.parse_candidates(["clipped_low"])
    bit = OneBitMean(epsilon=1.0, lo=0.0, hi=1.0, buckets=4, scale="linear")
    assert bit.parse_candidates(["mean"]) == ["mean"]
    with pytest.raises(ParameterError, match="mean only"):
        bit.parse_candidates(["p50"])


def test_the_task_defaults_are_explicit_in_the_configuration() -> None:
    task = TaskConfig.create(task_id="x", mechanism="numeric", epsilon=2, lo=0, hi=1)
    assert task.to_dict()["buckets"] == numeric_module.DEFAULT_BUCKETS
    assert task.to_dict()["method"] == "sw"
    assert TaskConfig.from_dict(task.to_dict()).fingerprint == task.fingerprint
    with pytest.raises(ParameterError, match="takes no"):
        TaskConfig.create(task_id="y", mechanism="rr", epsilon=1, lo=0)


def test_vectorized_buckets_equal_the_per_value_ones() -> None:
    mechanism = SquareWave(epsilon=1.0, lo=1.0, hi=1000.0, buckets=64, scale="log")
    values = np.concatenate([np.random.default_rng(4).lognormal(3, 2, 5000), [0.0, 1.0, 1e9]])
    expected = [mechanism.bucket_of(float(v)) for v in values]
    assert mechanism.buckets_of(values).tolist() == expected
    assert mechanism.buckets_of([3, 7.5]).tolist() == [
        mechanism.bucket_of(3),
        mechanism.bucket_of(7.5),
    ]
    for bad in (["7"], [True], [1.0, float("nan")]):
        with pytest.raises(ValueOutOfDomain):
            mechanism.privatize_many(bad)


@pytest.mark.parametrize("method", ["sw", "1bit"])
def test_a_handful_of_reports_is_answered_but_not_called_reliable(method: str) -> None:
    # One report: the bootstrap redraws it alone and the closed forms see a share of 0 or
    # 1, so every SE came out 0.0 with reliable: true (found by an outside audit).
    kind = SquareWave if method == "sw" else OneBitMean
    mechanism = kind(epsilon=2.0, lo=0.0, hi=100.0, buckets=64, scale="linear")
    rng = np.random.default_rng(3)
    for n, few in ((1, True), (est.FEW_REPORTS - 1, True), (est.FEW_REPORTS, False)):
        sums = mechanism.new_sums()
        sums.add_many(mechanism.privatize_many(rng.uniform(0, 100, n), rng))
        mean = next(row for row in mechanism.estimate(sums).rows() if row["value"] == "mean")
        assert mean["reliable"] is not few, (n, mean)
        if few:
            assert f"only {n} reports" in mean["reason"]


@pytest.mark.parametrize("buckets", [2, 3])
def test_the_fewest_buckets_a_task_may_have_are_answered(buckets: int) -> None:
    # 2 and 3 buckets (the API admits 2): fewer than a cubic spline's functions, and at 2
    # no bucket between the ends: both raised (a 500 over HTTP) before.
    mechanism = SquareWave(epsilon=1.0, lo=0.0, hi=10.0, buckets=buckets, scale="linear")
    rng = np.random.default_rng(5)
    sums = mechanism.new_sums()
    sums.add_many(mechanism.privatize_many(rng.uniform(0, 10, 5_000), rng))
    rows = mechanism.estimate(sums).rows()
    assert {row["value"] for row in rows} >= {"mean", "p50", "p99"}
    assert all(np.isfinite(row["estimate"]) and 0 <= row["estimate"] <= 10 for row in rows)
    mean = next(row for row in rows if row["value"] == "mean")
    assert abs(mean["estimate"] - 5.0) < 5 * mean["std_error"] + 0.5


def test_coarse_log_buckets_flag_what_depends_on_where_values_sit_inside_a_bucket() -> None:
    # 3 log buckets on [1, 10], values uniform: the mean with each bucket's values spread
    # evenly on the log scale is 5.07-5.25, evenly in value 5.50 (the truth): the reports
    # cannot say which, so the answer must not claim a ±0.1 interval (it did: reliable).
    rng = np.random.default_rng(8)
    coarse = SquareWave(epsilon=2.0, lo=1.0, hi=10.0, buckets=3, scale="log")
    sums = coarse.new_sums()
    sums.add_many(coarse.privatize_many(rng.uniform(1, 10, 20_000), rng))
    rows = {row["value"]: row for row in coarse.estimate(sums, ["mean", "p50"]).rows()}
    for name in ("mean", "p50"):
        assert rows[name]["reliable"] is False, rows[name]
        assert "coarse" in rows[name]["reason"]
    # at 256 log buckets the two spreads differ by ~(ln r)²/12 of a value: never flagged so
    fine = SquareWave(epsilon=2.0, lo=1.0, hi=10_000.0, buckets=256, scale="log")
    sums = fine.new_sums()
    sums.add_many(fine.privatize_many(np.exp(rng.uniform(0, np.log(10_000), 10_000)), rng))
    for row in fine.estimate(sums, ["mean", "p50", "p90"]).rows():
        assert "coarse" not in row.get("reason", ""), row


def test_an_end_bucket_whose_output_was_never_seen_still_has_a_standard_error() -> None:
    # 10^4 reports at eps = 2 over 256 log buckets put about 14 in an end output; the
    # plug-in SE sqrt(p(1 - p)/n) shrank with the count (0 when none came: an interval of
    # zero width), and over 1,000 runs covered 92.6 %. Agresti-Coull's: 95.3 %.
    mechanism = SquareWave(epsilon=2.0, lo=1.0, hi=1e4, buckets=256, scale="log")
    channel = mechanism.channel
    counts = np.full(channel.outputs, 40)
    counts[0] = 0
    share, error = est.closed_form(channel, counts, "first_bucket", mechanism.to_value, False)
    assert share < 0 < error
    expected = np.sqrt(2 / (counts.sum() + 4) * (1 - 2 / (counts.sum() + 4)) / (counts.sum() + 4))
    assert error == pytest.approx(expected / (channel.near - channel.far))


@pytest.mark.parametrize(("scale", "spread"), [("linear", 1.0), ("linear", 0.0), ("log", 1.0)])
def test_a_query_of_closed_forms_only_fits_nothing_and_answers_the_same_rows(
    scale: str, spread: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    # spread 0: every device holds one value, so the mean is flagged (values in one bucket)
    mechanism = SquareWave(epsilon=2.0, lo=1.0, hi=1000.0, buckets=64, scale=scale)
    rng = np.random.default_rng(11)
    sums = mechanism.new_sums()
    sums.add_many(mechanism.privatize_many(rng.lognormal(5, spread, 20_000), rng))
    asked = ["first_bucket", "last_bucket"] + (["mean"] if scale == "linear" else [])
    full = {row["value"]: row for row in mechanism.estimate(sums, [*asked, "p50"]).rows()}
    assert ("reason" in full.get("mean", {})) == (spread == 0.0)

    def no_fit(*_: object) -> object:
        raise AssertionError("a closed-form query fitted a spline")

    monkeypatch.setattr(est.pspline, "select", no_fit)
    for answered in (mechanism.estimate(sums, asked), *mechanism.estimate_rows([sums], asked)):
        assert answered.rows() == [full[name] for name in asked]
