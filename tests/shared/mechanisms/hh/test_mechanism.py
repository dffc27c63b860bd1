"""hh (docs/design.md, "Heavy hitters"; PROTOCOL.md §3.7): fixed device levels, exact ε per
device, normalisation, discovery."""

from __future__ import annotations

import hashlib
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import chisquare

from ldp_telemetry.shared import (
    DecodeError,
    ParameterError,
    TaskConfig,
    ValueOutOfDomain,
    decode_report,
)
from ldp_telemetry.shared.codec import Envelope, encode_report, new_report_id
from ldp_telemetry.shared.mechanisms.hh.mechanism import HeavyHitters, LevelReport
from ldp_telemetry.shared.mechanisms.hh.search import LevelSearch
from tests.shared.cases import HH_VALUES, all_outputs, fraction_log, tiny_heavy_hitters

LETTERS = "abcdefghijklmnopqrstuvwxyz"


def words_task(**overrides: object) -> HeavyHitters:
    params: dict = dict(epsilon=4.0, k=256, m=256, hash_seed=5, alphabet=LETTERS, max_length=8)
    params.update(overrides)
    return HeavyHitters(**params)


def key_of(i: int) -> bytes:
    return hashlib.sha256(f"device {i}".encode()).digest()


def test_levels_and_lengths_follow_the_contract() -> None:
    hh = HeavyHitters(epsilon=4.0, k=8, m=16, hash_seed=1, alphabet=LETTERS, max_length=16)
    assert hh.lengths == (2, 4, 6, 8, 10, 12, 14, 16) and hh.level_count == 8
    odd = HeavyHitters(
        epsilon=4.0, k=8, m=16, hash_seed=1, alphabet=LETTERS, max_length=7, first=3, step=3
    )
    assert odd.lengths == (3, 6, 7) and odd.level_count == 1 + math.ceil((7 - 3) / 3)
    # Each level hashes with its own seed (level 0 keeps the task's).
    seeds = [s.hash_seed for s in hh.sketches]
    assert seeds[0] == 1 and len(set(seeds)) == len(seeds)


def test_device_level_is_stable_per_device_and_uniform_over_devices() -> None:
    hh = words_task(max_length=16)  # G = 8
    levels = [hh.for_device(key_of(i)).device_level for i in range(16_000)]
    again = [hh.for_device(key_of(i)).device_level for i in range(200)]
    assert levels[:200] == again
    counts = np.bincount(np.asarray(levels), minlength=hh.level_count)
    assert chisquare(counts).pvalue > 1e-4
    device = hh.for_device(key_of(3))
    rng = np.random.default_rng(0)
    assert {device.privatize("hello", rng).level for _ in range(50)} == {device.device_level}
    batch = device.privatize_many(["hello", "abc"] * 20, rng)
    assert set(batch.levels.tolist()) == {device.device_level}


def test_for_device_refuses_what_is_not_a_key() -> None:
    with pytest.raises(ParameterError, match="device's key"):
        words_task().for_device(b"short")


@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_a_bound_device_is_exactly_epsilon_ldp_at_its_level(epsilon: float) -> None:
    """One report = one CMS report of the device's level; other levels are never sent."""
    unbound = tiny_heavy_hitters(epsilon=epsilon)
    values = (*HH_VALUES, "b", "aaa")
    seen_levels = set()
    for i in range(40):
        device = unbound.for_device(key_of(i))
        seen_levels.add(device.device_level)
        outputs = all_outputs(device)
        worst = Fraction(0)
        for value in values:
            probs = [device.output_probability(value, o) for o in outputs]
            assert sum(probs) == 1
            assert all(
                (p > 0) == (o.level == device.device_level)
                for p, o in zip(probs, outputs, strict=True)
            )
        for x in values:
            for y in values:
                for o in outputs:
                    if o.level == device.device_level and x != y:
                        worst = max(
                            worst, device.output_probability(x, o) / device.output_probability(y, o)
                        )
        assert fraction_log(worst) <= device.epsilon * (1 + 1e-12)
        assert math.isclose(float(worst), math.exp(device.effective_epsilon), rel_tol=1e-12)
    assert seen_levels == {0, 1, 2}


def test_values_are_normalised_and_checked_without_echoing_them() -> None:
    hh = HeavyHitters(epsilon=4.0, k=8, m=16, hash_seed=1, alphabet="abcé", max_length=4)
    assert hh.canonical("abe\u0301") == "abé".encode()  # NFC: e + combining acute = é
    with pytest.raises(ValueOutOfDomain) as error:
        hh.canonical("secret")
    assert "secret" not in str(error.value)
    for bad in ("", "abcab", 3, None):
        with pytest.raises(ValueOutOfDomain):
            hh.canonical(bad)
    raw = HeavyHitters(epsilon=4.0, k=8, m=16, hash_seed=1, alphabet="bytes", max_length=4, step=1)
    assert raw.canonical("é!") == "é!".encode()  # 3 bytes
    with pytest.raises(ValueOutOfDomain):
        raw.canonical("ééé")  # 6 bytes
    # A value shorter than the level's length reports itself + END, never a prefix.
    assert hh.item(hh.units("a"), 0) == "a\xff" and hh.item(hh.units("abca"), 0) == "ab"
    assert hh.item(hh.units("ab"), 0) == "ab"  # also every longer value's prefix


def test_parameters_defaults_wire_and_bounds() -> None:
    task = TaskConfig.create(task_id="words", mechanism="hh", epsilon=4, k=16, m=32, max_length=6)
    # bytes at step 2 would fit only 17 survivors: a new task's step defaults to 1
    assert (task.alphabet, task.first, task.step) == ("bytes", 2, 1)
    assert TaskConfig.from_dict(task.to_dict()) == task
    assert task.mechanism_object.sums_shape == (5 * 16, 32)
    # one-symbol values: level 0 is the only level, 1 symbol long (2 was refused)
    short = TaskConfig.create(task_id="s", mechanism="hh", epsilon=4, k=16, m=32, max_length=1)
    assert (short.first, short.mechanism_object.lengths) == (1, (1,))
    small = TaskConfig.create(
        task_id="w", mechanism="hh", epsilon=4, k=16, m=32, max_length=6, alphabet=LETTERS
    )
    assert small.step == 2 and small.mechanism_object.sums_shape == (3 * 16, 32)
    with pytest.raises(ParameterError, match=r"3,794,752 candidates.*use step 1"):
        TaskConfig.create(task_id="w", mechanism="hh", epsilon=4, k=16, m=32, max_length=6, step=2)
    # A task published before (stored with step 2) still loads: only new tasks are refused.
    stored = {**task.to_dict(), "step": 2}
    stored.pop("fingerprint")
    stored.pop("derived")  # published for step 1: a step-2 task publishes its own
    assert TaskConfig.from_dict(stored).step == 2
    device = task.mechanism_object.for_device(key_of(1))
    report = device.privatize("hi", np.random.default_rng(1))
    envelope = Envelope(new_report_id(), task.fingerprint, 0, report)
    assert decode_report(task, encode_report(task, envelope)).payload == report
    wire = encode_report(task, envelope)
    wire["level"] = 5  # levels 0 … 4
    with pytest.raises(DecodeError):
        decode_report(task, wire)
    with pytest.raises(ParameterError, match="candidates at one level"):
        HeavyHitters(epsilon=4.0, k=8, m=16, hash_seed=1, alphabet="bytes", max_length=8, first=3)
    wide = HeavyHitters(epsilon=4.0, k=8, m=16, hash_seed=1, alphabet="bytes", max_length=8)
    with pytest.raises(ParameterError, match="at most 17 survivors"):
        wide.discover(wide.new_sums(), survivors=64)  # 64 × 243² extensions
    for alphabet in ("a", "abca", 7):
        with pytest.raises(ParameterError):
            words_task(alphabet=alphabet)


def planted_population(rng: np.random.Generator) -> tuple[list[str], dict[str, int]]:
    heavy = {"hello": 30_000, "world": 20_000, "abcdefgh": 15_000, "ab": 10_000, "privacy": 8_000}
    values = [w for w, c in heavy.items() for _ in range(c)]
    values += ["zzq"] * 40  # a planted rare string
    letters = np.array(list(LETTERS))
    values += ["".join(rng.choice(letters, size=rng.integers(3, 9))) for _ in range(40_000)]
    return values, heavy


def test_discovery_finds_the_planted_strings_and_not_a_rare_one() -> None:
    rng = np.random.default_rng(20261124)
    hh = words_task()
    values, heavy = planted_population(rng)
    sums = hh.new_sums()
    sums.add_many(hh.privatize_many(values, rng))
    found = hh.discover(sums, top=10, survivors=32)
    rows = {r["value"]: r for r in found.rows()}
    assert set(list(rows)[:5]) == set(heavy)
    assert all(rows[w]["reliable"] for w in heavy)
    assert "zzq" not in rows or not rows["zzq"]["reliable"]
    assert sum(r["reliable"] for r in found.rows()) == len(heavy)
    for word, count in heavy.items():
        assert rows[word]["ci_low"] < count < rows[word]["ci_high"]
    assert found.examined[0] == 26 + 26**2 and len(found.examined) == hh.level_count
    assert found.estimates.n == len(values)
    # The estimates endpoint's path: the same levels' estimate for a named string, but
    # for the other found strings' collisions, which the discovery takes out.
    named = hh.estimate(sums, ["hello", "zzq"])
    assert abs(named.estimate[0] - rows["hello"]["estimate"]) < 0.25 * named.std_error[0]
    assert abs(named.estimate[1]) < 4 * named.std_error[1]


class Streamed:
    """Sums without per-row n, as the collector's streamed sums are."""

    def __init__(self, n: int, table: np.ndarray) -> None:
        self.total, self.table = n, table


def test_level_n_is_estimated_closely_from_streamed_sums() -> None:
    rng = np.random.default_rng(3)
    hh = words_task()
    sums = hh.new_sums()
    sums.add_many(hh.privatize_many(["hello", "abc", "xyz"] * 10_000, rng))
    exact = LevelSearch(hh.sketches, hh.lengths, hh.symbols, b"\xff", sums)
    streamed = LevelSearch(
        hh.sketches, hh.lengths, hh.symbols, b"\xff", Streamed(sums.total, sums.table)
    )
    for g in range(hh.level_count):
        # sqrt(n_g·m·q(1−q))/((1−q)+(m−1)q) ≈ 6 reports here; 5 sd is 30.
        assert abs(streamed.level_n(g) - exact.level_n(g)) < 30


def test_estimates_are_unbiased_with_honest_standard_errors() -> None:
    """Over seeded runs, z-scores of known counts have mean ≈ 0 and sd ≈ 1 (or below)."""
    hh = words_task(k=128, m=128, max_length=4)  # G = 2
    truth = {"ab": 3000, "abc": 1500, "ba": 600, "cab": 0}
    values = [w for w, c in truth.items() for _ in range(c)] + ["zz"] * 4900
    scores = []
    for seed in range(30):
        rng = np.random.default_rng(seed)
        sums = hh.new_sums()
        sums.add_many(hh.privatize_many(values, rng))
        result = hh.estimate(sums, list(truth))
        scores.append((result.estimate - np.array(list(truth.values()))) / result.std_error)
    z = np.array(scores)
    assert abs(z.mean()) < 0.35
    assert 0.6 < z.std() < 1.3


def test_privatize_many_takes_explicit_levels() -> None:
    hh = words_task()
    batch = hh.privatize_many(["hello", "abc"], np.random.default_rng(1), levels=[3, 0])
    assert batch.levels.tolist() == [3, 0]
    assert isinstance(batch.report(0), LevelReport)
    with pytest.raises(ParameterError, match="levels"):
        hh.privatize_many(["hello"], levels=[hh.level_count])


def test_chunked_search_equals_one_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    """The running top-survivors over small chunks keeps exactly what one chunk keeps."""
    from statistics import NormalDist

    from ldp_telemetry.shared.mechanisms.hh import search as hh_search

    rng = np.random.default_rng(11)
    hh = words_task(max_length=6)
    values, _ = planted_population(rng)
    sums = hh.new_sums()
    sums.add_many(hh.privatize_many([v[:6] for v in values[::4]], rng))
    whole = hh.discover(sums, top=12, survivors=20)
    monkeypatch.setattr(hh_search, "CHUNK", 997)
    chunked = hh.discover(sums, top=12, survivors=20)
    assert chunked.estimates.values == whole.estimates.values
    assert np.array_equal(chunked.estimates.estimate, whole.estimates.estimate)
    assert chunked.examined == whole.examined
    assert whole.reliable_z == pytest.approx(NormalDist().inv_cdf(1 - 0.05 / whole.examined[-1]))


def test_discovery_ranks_by_lower_bound_reliable_first() -> None:
    """A long string (whole at one level of four: a large SE) does not outrank by noise."""
    rng = np.random.default_rng(2)
    hh = HeavyHitters(epsilon=2.0, k=32, m=64, hash_seed=5, alphabet="ab", max_length=8)
    values = ["a"] * 1500 + ["abbabbab"] * 1500 + ["b"] * 3000
    letters = np.array(list("ab"))
    values += ["".join(rng.choice(letters, size=rng.integers(3, 9))) for _ in range(10_000)]
    sums = hh.new_sums()
    sums.add_many(hh.privatize_many(values, rng))
    found = hh.discover(sums, top=8, survivors=16)
    rows = found.rows()
    bounds = [r["estimate"] - found.reliable_z * r["std_error"] for r in rows]
    assert bounds == sorted(bounds, reverse=True)
    flags = [r["reliable"] for r in rows]
    assert flags == sorted(flags, reverse=True)  # every reliable row first
    assert [r["value"] for r in rows[:3]] == ["b", "a", "abbabbab"]
    # Here the point estimates disagree: "abbabbab" is above "a" but twice as noisy.
    assert rows[2]["estimate"] > rows[1]["estimate"]
