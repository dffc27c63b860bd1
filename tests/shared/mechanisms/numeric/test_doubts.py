"""Square Wave answers flag, in every run, the statistics whose intervals would mislead."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ldp_telemetry.shared.mechanisms.numeric import estimate as est
from ldp_telemetry.shared.mechanisms.numeric.mechanism import SquareWave
from ldp_telemetry.shared.mechanisms.numeric.shape import percentile

SEEDS = (0, 1, 2)


def square_wave(epsilon: float, buckets: int, scale: str = "linear") -> SquareWave:
    lo, hi = (1.0, 1e4) if scale == "log" else (0.0, 100.0)
    return SquareWave(epsilon=epsilon, lo=lo, hi=hi, buckets=buckets, scale=scale)


def rows(mechanism: SquareWave, values: np.ndarray, seed: int, names: list[str]) -> dict[str, Any]:
    sums = mechanism.new_sums()
    sums.add_many(mechanism.privatize_many(values, np.random.default_rng(seed)))
    return {row["value"]: row for row in mechanism.estimate(sums, names).rows()}


def test_a_point_mass_on_a_bucket_edge_is_flagged_in_every_run() -> None:
    mechanism = square_wave(1.0, 64)  # 50.0: the edge between buckets 31 and 32
    for seed in SEEDS:
        found = rows(mechanism, np.full(10_000, 50.0), seed, ["mean", "p50"])
        for name in ("mean", "p50"):
            assert found[name]["reliable"] is False, (seed, name)
            assert "concentrate" in found[name]["reason"]


def test_a_bimodal_median_in_the_gap_is_flagged_in_every_run() -> None:
    mechanism = square_wave(1.0, 64)
    for seed in SEEDS:
        rng = np.random.default_rng(100 + seed)
        values = np.where(rng.random(10_000) < 0.5, rng.normal(25, 4, 10_000), 75.0)
        values[values == 75.0] = rng.normal(75, 4, int(np.sum(values == 75.0)))
        assert rows(mechanism, values, seed, ["p50"])["p50"]["reliable"] is False, seed


def test_a_percentile_at_a_piles_edge_is_flagged_in_every_run() -> None:
    mechanism = square_wave(1.0, 64)
    for seed in SEEDS[:2]:
        rng = np.random.default_rng(200 + seed)
        side = rng.random(10_000)
        values = np.where(
            side < 0.05, -10.0, np.where(side > 0.95, 110.0, rng.uniform(0, 100, 10_000))
        )
        row = rows(mechanism, values, seed, ["p95"])["p95"]
        assert row["reliable"] is False and "piled" in row["reason"], seed


@pytest.mark.parametrize(("epsilon", "buckets", "scale"), [(1.0, 64, "linear"), (2.0, 256, "log")])
def test_smooth_populations_raise_none_of_the_shape_doubts(
    epsilon: float, buckets: int, scale: str
) -> None:
    mechanism = square_wave(epsilon, buckets, scale)
    rng = np.random.default_rng(300)
    unit = rng.uniform(0, 1, 10_000) if scale == "linear" else rng.normal(0.45, 0.12, 10_000)
    values = np.asarray(mechanism.to_value(np.clip(unit, 0, 1)))
    for seed in SEEDS[:2]:
        for name, row in rows(mechanism, values, seed, ["p50", "p75"]).items():
            reason = row.get("reason", "")  # EMS's bias may flag one now and then: noise
            assert not any(w in reason for w in ("concentrate", "between modes", "piled")), (
                seed,
                name,
            )


def test_log_scale_percentile_errors_are_measured_where_the_buckets_are_equal() -> None:
    def to_value(u: np.ndarray) -> np.ndarray:
        return np.exp(10 * np.asarray(u))

    rng = np.random.default_rng(4)
    fitted = np.full(32, 1 / 32)
    refits = rng.dirichlet(np.full(32, 20.0), size=40)  # percentiles scattered around 0.5
    units = np.array([percentile(r, 0.5) for r in refits])
    error, bias = est.unit_spread(fitted, refits, 0.5, to_value)
    slope = 10 * np.exp(10 * 0.5)  # d value / d unit at the estimate
    assert error == pytest.approx(np.std(units, ddof=1) * slope, rel=1e-4)
    assert bias == pytest.approx((np.mean(units) - 0.5) * slope, rel=1e-4)
    skewed = np.std(to_value(units), ddof=1)  # what the spread in the task's units gave
    assert skewed != pytest.approx(error, rel=1e-3)


def test_a_percentile_short_of_a_pile_at_hi_is_flagged() -> None:
    """An outside audit's case: 2 % of values clipped to hi, so the true p98.5 and p99 are
    hi itself; the fit put a smaller pile there and answered 95.5 ± 1.3 and 96.6 ± 1.4, reliable."""
    mechanism = SquareWave(epsilon=2.0, lo=0.0, hi=100.0, buckets=32, scale="linear")
    for seed in (0, 5):
        rng = np.random.default_rng(seed)
        side = rng.random(30_000)
        values = np.where(
            side < 0.03, -5.0, np.where(side > 0.98, 120.0, rng.uniform(10, 90, 30_000))
        )
        for name, row in rows(mechanism, values, 500 + seed, ["p98.5", "p99"]).items():
            assert row["reliable"] is False, (seed, name, row["estimate"])


def test_a_p90_near_values_piled_at_hi_is_flagged_when_the_fit_found_no_pile() -> None:
    # 5 % below lo and 5 % above hi, eps = 1: the true p90 is 94.4. Seeds 69 and 165 are two
    # of 6 in 200 whose fit put nothing in the last bucket; its refits, pinned at the empty
    # end, understated the pile's SE, and p90 came out reliable, 90.5 ± 1.2 and 90.3 ± 1.6
    # (missing). The SE is now also measured on refits of the fit with the 10 % piled at hi.
    mechanism = square_wave(1.0, 64)
    for seed in (69, 165):
        rng = np.random.default_rng(seed)
        kind = rng.choice(3, 10_000, p=[0.9, 0.05, 0.05])
        values = np.choose(kind, [rng.uniform(0, 100, 10_000), np.full(10_000, -10.0), 110.0])
        sums = mechanism.new_sums()
        sums.add_many(mechanism.privatize_many(values, rng))
        p90 = mechanism.estimate(sums, ["p90"]).rows()[0]
        assert p90["reliable"] is False, (seed, p90)
        assert "piled" in p90["reason"]
