"""Longitudinal tasks: exact ε₁ and ε∞, permanent responses, repeated reports, variance."""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any, cast

import numpy as np
import pytest
import rfc8785

from ldp_telemetry.shared import (
    CountMeanSketch,
    GeneralizedRandomizedResponse,
    HadamardCountMeanSketch,
    ParameterError,
    RandomizedResponse,
    TaskConfig,
)
from ldp_telemetry.shared.accuracy import grr_count_variance, rr_count_variance
from ldp_telemetry.shared.estimates import Estimates
from ldp_telemetry.shared.mechanisms.longitudinal import Longitudinal, LongitudinalSpec
from ldp_telemetry.shared.randomness import SCALE, KeyedStream
from tests.shared.cases import STRINGS, all_outputs, fraction_log, worst_case_ratio

Builder = Callable[[float], Any]
KINDS: dict[str, tuple[Builder, tuple[Any, ...]]] = {
    "rr": (lambda eps: RandomizedResponse(epsilon=eps), (True, False)),
    "grr": (
        lambda eps: GeneralizedRandomizedResponse(epsilon=eps, domain=STRINGS[:4]),
        STRINGS[:4],
    ),
    "cms": (lambda eps: CountMeanSketch(epsilon=eps, k=2, m=4, hash_seed=3), STRINGS[:5]),
    "hcms": (lambda eps: HadamardCountMeanSketch(epsilon=eps, k=2, m=4, hash_seed=3), STRINGS),
}


def longitudinal(kind: str, epsilon_inf: float, **layer: float) -> Longitudinal:
    build, _ = KINDS[kind]
    return Longitudinal(build(epsilon_inf), LongitudinalSpec(epsilon_inf, **layer), kind)


def test_the_stream_is_hmac_drbg_sha256() -> None:
    # NIST CAVP HMAC_DRBG, SHA-256, no reseed, no personalization, COUNT 0: the second of
    # two 1024-bit generate calls.
    stream = KeyedStream(
        bytes.fromhex("ca851911349384bffe89de1cbdc46e6831e44d34a4fb935ee285dd14b71a7488"),
        bytes.fromhex("659ba96c601dc69fc902940805ec0ca8"),
    )
    stream.bytes(128)
    assert stream.bytes(128).hex() == (
        "e528e9abf2dece54d47c7e75e5fe302149f817ea9fb4bee6f4199697d04d5b89"
        "d54fbb978a15b5c443c9ec21036d2460b6f73ebad0dc2aba6e624abf07745bc1"
        "07694bb7547bb0995f70de25d6b29e2d3011bb19d27676c07162c8b5ccde0668"
        "961df86803482cb37ed6d5c0bb8d50cf1f50d476aa0458bdaba806f48be9dcb8"
    )


def test_stream_integers_are_uniform_and_repeatable() -> None:
    draws = KeyedStream(b"k" * 32, b"ctx").below(7, 70_000)
    assert np.array_equal(draws, KeyedStream(b"k" * 32, b"ctx").below(7, 70_000))
    assert not np.array_equal(draws, KeyedStream(b"k" * 32, b"other").below(7, 70_000))
    counts = np.bincount(draws, minlength=7)
    chi2 = float(((counts - 10_000) ** 2 / 10_000).sum())
    assert chi2 < 22.5  # chi-square, 6 degrees of freedom, p = 0.001


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize(("epsilon_inf", "flip"), [(4.0, 0.1), (1.0, 0.25), (6.0, 0.01)])
def test_one_report_spends_exactly_epsilon_1_and_a_value_epsilon_inf(
    kind: str, epsilon_inf: float, flip: float
) -> None:
    mechanism = longitudinal(kind, epsilon_inf, flip=flip)
    values = KINDS[kind][1]
    report_ratio = worst_case_ratio(mechanism, values)
    assert math.isclose(float(report_ratio), math.exp(mechanism.effective_epsilon), rel_tol=1e-12)
    assert report_ratio > Fraction(math.exp(mechanism.effective_epsilon * (1 - 1e-9)))
    permanent_ratio = worst_case_ratio(mechanism.permanent, values)
    assert math.isclose(
        fraction_log(permanent_ratio), mechanism.effective_epsilon_inf, rel_tol=1e-12
    )
    assert mechanism.effective_epsilon < mechanism.effective_epsilon_inf <= epsilon_inf
    for value in values:  # one report's probabilities: a distribution
        assert sum(mechanism.output_probability(value, o) for o in all_outputs(mechanism)) == 1


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_composition_is_the_two_layers_enumerated(kind: str) -> None:
    """P(report | value) = Σ_prr P_prr(prr | value) · P_irr(report | prr), exactly."""
    mechanism = longitudinal(kind, 2.0, flip=0.2)
    permanent, outputs = mechanism.permanent, all_outputs(mechanism)
    layer = permanent.compose_flip(0)  # the same mechanism: composing no flip changes nothing
    assert layer.effective_epsilon == permanent.effective_epsilon
    move = Fraction(mechanism.threshold, SCALE)

    def irr(report: Any, prr: Any) -> Fraction:
        if kind == "grr":
            return 1 - (permanent.d - 1) * move if report == prr else move
        if kind == "cms":
            a, b = np.unpackbits(np.frombuffer(report.bits + prr.bits, np.uint8)).reshape(2, -1)
            if report.row != prr.row:
                return Fraction(0)
            changed = int(np.count_nonzero(a[: permanent.m] != b[: permanent.m]))
            return move**changed * (1 - move) ** (permanent.m - changed)
        if kind == "hcms":
            if (report.row, report.col) != (prr.row, prr.col):
                return Fraction(0)
            return move if report.bit != prr.bit else 1 - move
        return move if report != prr else 1 - move

    value = KINDS[kind][1][0]
    for report in outputs:
        composed = sum(
            permanent.output_probability(value, prr) * irr(report, prr) for prr in outputs
        )
        assert mechanism.output_probability(value, report) == composed


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("epsilon_1", [0.5, 1.7, 2.9])
def test_epsilon_1_asked_is_met_with_the_least_noise(kind: str, epsilon_1: float) -> None:
    mechanism = longitudinal(kind, 3.0, epsilon_1=epsilon_1)
    assert mechanism.effective_epsilon <= epsilon_1
    one_less = mechanism.permanent.compose_flip(mechanism.threshold - 1)
    assert one_less.effective_epsilon > epsilon_1  # the smallest threshold that meets it
    assert mechanism.epsilon == epsilon_1


def test_the_design_reference_cms_epsilon_1_and_its_variance_ratio() -> None:
    """The design's reference: ε∞ = 4, f = 0.1 gives ε₁ = 2.83; variance ×2.33, not ×1.56.

    A count's variance per report is f(1−f)/(1−2f)² (times m/(m−1)² terms that cancel);
    The ×1.56 first calculated is the (1−2f)² part alone. f_prr = 0.1192, f_eff = 0.1954:
    (0.1954·0.8046/0.6093²) / (0.1192·0.8808/0.7616²) = 2.33; the simulation agrees.
    """
    mechanism = Longitudinal(
        CountMeanSketch(epsilon=4.0, k=1024, m=1024, hash_seed=1),
        LongitudinalSpec(4.0, flip=0.1),
        "cms",
    )
    assert mechanism.effective_epsilon == pytest.approx(2.831, abs=5e-4)
    f_prr, f_eff = mechanism.permanent.flip, mechanism.instant.flip
    assert f_eff == pytest.approx(f_prr * 0.9 + (1 - f_prr) * 0.1, abs=1e-9)
    per_report = [f * (1 - f) / (1 - 2 * f) ** 2 for f in (f_eff, f_prr)]
    ratio = mechanism.instant.noise_variance(
        100_000, np.zeros(1)
    ) / mechanism.permanent.noise_variance(100_000, np.zeros(1))
    assert ratio[0] == pytest.approx(per_report[0] / per_report[1], rel=0.005)  # + sampling
    assert ratio[0] == pytest.approx(2.332, abs=1e-3)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_permanent_response_is_the_devices_and_values_own(kind: str) -> None:
    mechanism = longitudinal(kind, 1.0, flip=0.1)
    value = KINDS[kind][1][0]
    device = mechanism.for_device(b"d" * 32)
    first = device.permanent_response(value)
    assert all(device.permanent_response(value) == first for _ in range(5))
    assert mechanism.for_device(b"d" * 32).permanent_response(value) == first
    others = {mechanism.for_device(bytes([i]) * 32).permanent_response(value) for i in range(40)}
    assert len(others) > 1, "other devices draw other permanent responses"
    with pytest.raises(ParameterError, match="for_device"):
        mechanism.permanent_response(value)
    with pytest.raises(ParameterError, match="16 bytes"):
        mechanism.for_device(b"short")


def test_a_thousand_reports_reveal_the_permanent_response_never_the_value() -> None:
    """Averaging one device's reports converges to its PRR: a lying PRR stays a lie."""
    rr = longitudinal("rr", 1.0, flip=0.2)
    liars = [
        device
        for device in (rr.for_device(bytes([i, 7]) * 16) for i in range(256))
        if device.permanent_response(True) == 0
    ]
    assert liars, "with ε∞ = 1 about a quarter of devices' permanent answer to True is 0"
    device = liars[0]
    ones = sum(device.privatize(True) for _ in range(1_000))
    assert ones < 300  # P(1) = 0.2 per report: the majority says 0, the PRR, not the value

    cms = longitudinal("cms", 2.0, flip=0.2)
    bound = cms.for_device(b"z" * 32)
    permanent = np.unpackbits(np.frombuffer(bound.permanent_response("apple").bits, np.uint8))
    reports = [bound.privatize("apple") for _ in range(1_000)]
    bits = np.array([np.unpackbits(np.frombuffer(r.bits, np.uint8)) for r in reports])
    assert {r.row for r in reports} == {bound.permanent_response("apple").row}
    assert np.array_equal(bits.mean(axis=0) > 0.5, permanent.astype(bool))


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_estimates_are_unbiased_with_the_closed_form_variance(kind: str) -> None:
    """Fresh devices (privatize_many): estimates over 300 populations vs the closed form."""
    build, values = KINDS[kind]
    if kind in ("cms", "hcms"):  # wider sketches: collisions out of the way
        values = STRINGS[:3]
        build = {
            "cms": lambda eps: CountMeanSketch(epsilon=eps, k=64, m=64, hash_seed=5),
            "hcms": lambda eps: HadamardCountMeanSketch(epsilon=eps, k=64, m=64, hash_seed=5),
        }[kind]
    mechanism = Longitudinal(build(3.0), LongitudinalSpec(3.0, flip=0.15), kind)
    truth = [values[0]] * 1_200 + [values[1]] * 600 + [values[-1]] * 200
    rng = np.random.default_rng(2026)
    found, errors = [], []
    for _ in range(300):
        sums = mechanism.new_sums()
        sums.add_many(mechanism.privatize_many(truth, rng))
        estimates = mechanism.estimate(sums, None if kind == "rr" else list(values[:2]))
        found.append(estimates.estimate[0])
        errors.append(estimates.std_error[0])
    expected = 1_200
    spread, claimed = float(np.std(found)), float(np.mean(errors))
    assert abs(np.mean(found) - expected) < 4 * claimed / math.sqrt(300)
    assert spread == pytest.approx(claimed, rel=0.15)


@pytest.mark.parametrize("kind", ["rr", "grr"])
def test_over_buckets_is_the_exact_variance_when_devices_repeat_their_value(kind: str) -> None:
    """B reports per device of one value: the variance of the summed estimate enumerated.

    A report hits the candidate with probability r1 if the permanent response does, r0 if
    not, and the permanent response does with probability a (a1 for a holder of the
    candidate, a0 otherwise): Var(Σ_b X_b) = B·E[r(1−r)] + B²·(r1 − r0)²·a(1−a).
    """
    buckets = 5
    mechanism = longitudinal(kind, 2.0, flip=0.2)
    permanent, instant = cast(Any, mechanism.permanent), cast(Any, mechanism.instant)
    names = ("p11", "p10") if kind == "rr" else ("p", "q")
    a1, a0 = (getattr(permanent, name) for name in names)
    c1, c0 = (getattr(instant, name) for name in names)
    spread = (c1 - c0) / (a1 - a0)  # r1 − r0
    r0 = c0 - a0 * spread
    r1 = r0 + spread
    values = (True, False) if kind == "rr" else STRINGS[:4]
    holders = dict(zip(values, (700, 300) if kind == "rr" else (400, 300, 200, 100), strict=True))
    devices = sum(holders.values())

    def device_variance(a: float) -> float:
        irr = a * r1 * (1 - r1) + (1 - a) * r0 * (1 - r0)
        return buckets * irr + buckets**2 * spread**2 * a * (1 - a)

    exact = [
        (holders[v] * device_variance(a1) + (devices - holders[v]) * device_variance(a0))
        / (c1 - c0) ** 2
        for v in values
    ]
    reports = devices * buckets
    counts = np.array([holders[v] * buckets for v in values], dtype=float)
    one_report_each = Estimates.from_variance(
        list(values), counts, _composed_variance(kind, instant, reports, counts), reports
    )
    widened = mechanism.over_buckets(one_report_each, buckets)
    assert widened.std_error**2 == pytest.approx(exact, rel=1e-9)
    assert np.all(widened.std_error < one_report_each.std_error * math.sqrt(buckets))


def _composed_variance(kind: str, instant: Any, n: int, counts: np.ndarray) -> np.ndarray:
    """Return the one-bucket closed form (what ``estimate`` answers at these counts)."""
    if kind == "rr":
        return np.full(len(counts), rr_count_variance(n, counts[0], instant.p11, instant.p10))
    return grr_count_variance(n, counts, instant.p, instant.q)


@pytest.mark.parametrize(
    ("longitudinal_option", "message"),
    [
        ({"epsilon_inf": 4}, "exactly one of epsilon_1, flip"),
        ({"epsilon_inf": 4, "flip": 0.1, "epsilon_1": 2}, "exactly one of epsilon_1, flip"),
        ({"flip": 0.1}, "needs epsilon_inf"),
        ({"epsilon_inf": 4, "flip": 0.5}, "below 0.5"),
        ({"epsilon_inf": 4, "flip": 0}, r"flip must be in \(0, 1\)"),
        ({"epsilon_inf": 2, "epsilon_1": 2}, "must be below epsilon_inf"),
        ({"epsilon_inf": 4, "flip": "0.1"}, "must be a number"),
        ({"epsilon_inf": 4, "flip": 0.1, "seed": 1}, "not \\['seed'\\]"),
        ([4, 0.1], "must be an object"),
    ],
)
def test_bad_options_are_refused_naming_the_fix(longitudinal_option: Any, message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        TaskConfig.create(task_id="t", mechanism="cms", k=4, m=8, longitudinal=longitudinal_option)


def test_epsilon_and_alpha_beta_beside_longitudinal_are_refused() -> None:
    option = {"epsilon_inf": 3, "flip": 0.1}
    with pytest.raises(ParameterError, match="leave epsilon out"):
        TaskConfig.create(
            task_id="t", mechanism="grr", epsilon=2, domain=["a", "b", "c"], longitudinal=option
        )
    with pytest.raises(ParameterError, match="no alpha and beta"):
        TaskConfig.create(task_id="t", mechanism="rr", alpha=0.5, beta=0.5, longitudinal=option)
    with pytest.raises(ParameterError, match="olh takes no longitudinal"):
        TaskConfig.create(task_id="t", mechanism="olh", epsilon=2, k=4, longitudinal=option)


def test_a_longitudinal_task_publishes_both_epsilons_and_round_trips() -> None:
    task = TaskConfig.create(
        task_id="t", mechanism="hcms", k=16, m=32, longitudinal={"epsilon_inf": 4, "flip": 0.1}
    )
    public = task.to_dict()
    assert public["longitudinal"] == {"epsilon_inf": 4.0, "flip": 0.1}
    assert public["effective_epsilon"] < public["effective_epsilon_inf"] <= 4.0
    assert TaskConfig.from_dict(public) == task
    assert TaskConfig.from_dict(public).fingerprint == task.fingerprint
    plain = TaskConfig.create(
        task_id="t", mechanism="hcms", k=16, m=32, epsilon=4.0, hash_seed=task.hash_seed
    )
    assert plain.fingerprint != task.fingerprint and "effective_epsilon_inf" not in plain.to_dict()


def test_the_permanent_response_is_derived_as_protocol_md_says() -> None:
    """PROTOCOL.md §3.9 re-implemented from its text (own HMAC-DRBG) for rr and cms."""
    import hashlib
    import hmac

    def drbg(seed: bytes) -> Callable[[int], bytes]:
        state = {"k": bytes(32), "v": b"\x01" * 32}

        def h(key: bytes, data: bytes) -> bytes:
            return hmac.new(key, data, hashlib.sha256).digest()

        def update(data: bytes) -> None:
            state["k"] = h(state["k"], state["v"] + b"\x00" + data)
            state["v"] = h(state["k"], state["v"])
            if data:
                state["k"] = h(state["k"], state["v"] + b"\x01" + data)
                state["v"] = h(state["k"], state["v"])

        def generate(size: int) -> bytes:
            out = b""
            while len(out) < size:
                state["v"] = h(state["k"], state["v"])
                out += state["v"]
            update(b"")
            return out[:size]

        update(seed)
        return generate

    def words(generate: Callable[[int], bytes], count: int) -> list[int]:
        raw = generate(4 * count)
        return [int.from_bytes(raw[i : i + 4], "little") for i in range(0, len(raw), 4)]

    def below(generate: Callable[[int], bytes], n: int) -> int:
        while True:
            for word in words(generate, 5):
                if word < 2**32 - 2**32 % n:
                    return word % n

    secret = bytes(range(32))
    for kind, fields, value, canonical in (
        ("rr", {"longitudinal": {"epsilon_inf": 1.0, "flip": 0.1}}, True, b"\x01"),
        (
            "cms",
            {"k": 8, "m": 16, "hash_seed": 9, "longitudinal": {"epsilon_inf": 2.0, "flip": 0.1}},
            "apple",
            b"apple",
        ),
    ):
        task = TaskConfig(task_id="lt", mechanism=kind, **fields)
        key = hmac.new(secret, b"ldp-telemetry device key\x00lt", hashlib.sha256).digest()
        identity = rfc8785.dumps(task.params.to_fields())  # P: RFC 8785, as the fingerprint
        generate = drbg(
            key + b"ldp-telemetry permanent response\x00" + identity + b"\x00" + canonical
        )
        mechanism = task.mechanism_object
        assert isinstance(mechanism, Longitudinal)
        expected = mechanism.for_device(key).permanent_response(value)
        permanent: Any = mechanism.permanent
        if kind == "rr":
            assert expected == int(words(generate, 1)[0] < permanent.threshold_yes)
        else:
            row = below(generate, 8)
            bits = [int(w < permanent.flip_threshold) for w in words(generate, 16)]
            bits[permanent.hashes.bucket(permanent.key(value), row)] ^= 1
            assert (expected.row, expected.bits) == (row, bytes(np.packbits(bits)))
