"""Fake devices: each mechanism's reach, the CMS weight band, the tests of the sums."""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from scipy import stats

from ldp_telemetry.shared.contract import IMPLAUSIBLE_REPORT
from ldp_telemetry.shared.errors import DecodeError
from ldp_telemetry.shared.mechanisms.poisoning import (
    HONEST_MISS,
    SUSPECT_Z,
    Reach,
    poisoning_bound,
    rows_test,
    weight_band,
    weight_test,
)
from ldp_telemetry.shared.mechanisms.registry import params_class
from ldp_telemetry.shared.wire import b64encode

DOMAIN = [f"v{i}" for i in range(16)]
COUNTING = {
    "rr": {"epsilon": 1.0},
    "grr": {"epsilon": 1.0, "domain": DOMAIN},
    "oue": {"epsilon": 1.0, "domain": DOMAIN},
    "ss": {"epsilon": 1.0, "domain": DOMAIN},
    "olh": {"epsilon": 2.0, "k": 64, "hash_seed": 5},
    "cms": {"epsilon": 2.0, "k": 64, "m": 64, "hash_seed": 5},
    "hcms": {"epsilon": 2.0, "k": 64, "m": 64, "hash_seed": 5},
    "hh": {"epsilon": 2.0, "k": 16, "m": 64, "alphabet": "ab", "max_length": 4, "hash_seed": 5},
}


def build(kind: str) -> object:
    return params_class(kind).from_fields(COUNTING[kind]).build()


@pytest.mark.parametrize("kind", sorted(COUNTING))
def test_no_report_moves_a_count_beyond_its_reach(kind: str) -> None:
    """Every single report's estimate lies in [low, high], and some report comes near high."""
    mechanism = build(kind)
    reach = mechanism.reach()
    rng = np.random.default_rng(7)
    values = [True, False] if kind == "rr" else ["ab", "ba", "aa"] if kind == "hh" else DOMAIN
    seen = []
    for value in values:
        for _ in range(30):
            sums = mechanism.new_sums()
            sums.add_many(mechanism.stack([mechanism.privatize(value, rng)]))
            seen.extend(mechanism.estimate(sums, values).estimate)
    assert reach.low - 1e-9 <= min(seen) and max(seen) <= reach.high + 1e-9
    if kind != "hh":  # hh's bound is for a string whole at one level only
        assert max(seen) == pytest.approx(reach.high, rel=0.05)


def test_reach_is_how_many_honest_devices_one_fake_report_is_worth() -> None:
    """GRR at d = 1,024, ε = 1: (e^ε + d − 2)/(e^ε − 1) = 596."""
    domain = [f"x{i}" for i in range(1024)]
    grr = params_class("grr").from_fields({"epsilon": 1.0, "domain": domain}).build()
    e = np.exp(grr.effective_epsilon)  # the implemented ε (thresholds round it down)
    assert grr.reach().high == pytest.approx((e + 1022) / (e - 1), rel=1e-9)
    assert grr.reach().high == pytest.approx(596, abs=0.5)
    assert Reach(-1.0, 3.0).shift(10) == (-10.0, 30.0)


@pytest.mark.parametrize(("m", "flip"), [(64, Fraction(1, 5)), (1024, Fraction(3, 25))])
def test_weight_band_leaves_honest_reports_with_at_most_the_stated_probability(
    m: int, flip: Fraction
) -> None:
    band = weight_band(m, flip)
    f = float(flip)

    # W = Bernoulli(1 − f) + Binomial(m − 1, f), exactly by scipy.
    def cdf(w: int) -> float:
        return (1 - f) * stats.binom.cdf(w - 1, m - 1, f) + f * stats.binom.cdf(w, m - 1, f)

    below, above = cdf(band.low - 1), 1.0 - cdf(band.high)
    assert below <= HONEST_MISS / 2 * 1.001 and above <= HONEST_MISS / 2 * 1.001
    # ... and the band is the narrowest: one step in lets more than that out.
    assert cdf(band.low) > HONEST_MISS / 2 or 1.0 - cdf(band.high - 1) > HONEST_MISS / 2
    assert band.mean == pytest.approx(1 - f + (m - 1) * f)


def test_cms_refuses_a_report_outside_the_band_and_keeps_honest_ones() -> None:
    cms = (
        params_class("cms").from_fields({"epsilon": 4.0, "k": 8, "m": 1024, "hash_seed": 1}).build()
    )
    rng = np.random.default_rng(3)
    for report in (cms.privatize("a", rng) for _ in range(200)):
        assert cms.decode_payload(cms.encode_payload(report)) == report
    all_ones = {"row": 0, "bits": b64encode(b"\xff" * 128)}
    with pytest.raises(DecodeError) as error:
        cms.decode_payload(all_ones)
    assert error.value.reason == IMPLAUSIBLE_REPORT


def test_weight_test_flags_sixty_all_ones_reports_among_a_million() -> None:
    """60 all-ones reports among 10^6 (m = 1,024, ε = 4) give z > 5."""
    cms = (
        params_class("cms").from_fields({"epsilon": 4.0, "k": 8, "m": 1024, "hash_seed": 1}).build()
    )
    band, n = cms.band, 10**6
    honest = weight_test(round(n * band.mean), n, band)
    assert not honest.suspected
    attacked = weight_test(round(n * band.mean) + 60 * 1024, n + 60, band)
    assert attacked.z > 5 and attacked.suspected and attacked.p_value < 1e-6


def test_rows_test_sees_reports_piled_on_one_row() -> None:
    rng = np.random.default_rng(9)
    even = np.bincount(rng.integers(0, 256, 100_000), minlength=256)
    assert rows_test(even) is not None and not rows_test(even).suspected
    piled = even.copy()
    piled[3] += 1_000
    assert rows_test(piled).z > SUSPECT_Z


def test_repeated_reports_of_one_permanent_response_are_judged_as_such() -> None:
    """Longitudinal cms: two reports of one PRR covary as the weight test now assumes,
    and an honest window of 4 buckets is not flagged (it was: rows z ≈ 11)."""
    spec = {"k": 64, "m": 64, "hash_seed": 5, "longitudinal": {"epsilon_inf": 4.0, "flip": 0.05}}
    layer: Any = params_class("cms").from_fields(spec).build()
    permanent, rng = layer.permanent, np.random.default_rng(4)
    values = [f"w{int(x)}" for x in rng.integers(0, 50, 20_000)]
    responses = permanent.privatize_many(values, rng)
    buckets = [permanent.reflip_many(responses, layer.threshold, rng) for _ in range(4)]
    weights = [np.unpackbits(batch.bits, axis=1).sum(axis=1) for batch in buckets]
    t = float(layer.flip)
    share = (1 - 2 * t) ** 2 * permanent.band.variance / layer.instant.band.variance
    assert np.corrcoef(weights[0], weights[1])[0, 1] == pytest.approx(share, abs=0.03)
    sums = layer.new_sums()
    for batch in buckets:
        sums.add_many(batch)
    independent = {c.name: c for c in layer.instant.check_sums(sums)}
    assert independent["row_spread"].z > 2 * SUSPECT_Z  # four reports per row draw
    judged = {c.name: c for c in layer.check_sums(sums, buckets=4)}
    assert not any(c.suspected for c in judged.values())
    assert judged["bit_weight"].z == pytest.approx(
        independent["bit_weight"].z / np.sqrt(1 + 3 * share)
    )


def test_no_fake_reports_shift_nothing_and_print_no_negative_zero() -> None:
    bound = poisoning_bound(Reach(-1.5, 2.0), 0.0, 1_000)
    assert bound["count_shift"] == {"down": 0.0, "up": 0.0}
    assert "-0.0" not in json.dumps(bound)  # a -0.0 down-shift read as a sign error
