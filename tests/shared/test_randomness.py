"""Exact thresholds and secure randomness: rng=None draws only from the OS CSPRNG."""

from __future__ import annotations

import math
import os
import random
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import chisquare

from ldp_telemetry.shared import ParameterError, codec
from ldp_telemetry.shared.randomness import (
    SCALE,
    bernoulli_flags,
    bernoulli_packed,
    check_implementable,
    row_col_and_word,
    threshold_at_least,
    uniform_below,
    uniform_below_many,
    uniform_word,
    uniform_words,
)
from tests.shared.cases import Case, FakeEntropy, batch_reports, conformance_cases, output_key


@given(st.floats(min_value=1e-9, max_value=1 - 1e-9))
def test_threshold_is_the_smallest_at_or_above_the_probability(probability: float) -> None:
    threshold = threshold_at_least(probability)
    assert Fraction(threshold, SCALE) >= Fraction(probability)
    assert Fraction(threshold - 1, SCALE) < Fraction(probability)


def test_exact_probabilities_give_exact_thresholds() -> None:
    assert threshold_at_least(0.25) == SCALE // 4
    assert threshold_at_least(0.5) == SCALE // 2
    assert threshold_at_least(1 / 3) == SCALE // 3 + 1


@pytest.fixture(name="entropy")
def fixture_entropy(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeEntropy]:
    """Replace the OS CSPRNG by a counted, reproducible stream; forbid other sources."""
    fake = FakeEntropy(b"first")
    monkeypatch.setattr(os, "urandom", lambda count: fake(count))
    monkeypatch.setattr(random, "_urandom", lambda count: fake(count))

    def forbidden(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("privacy noise must not come from a numpy generator")

    monkeypatch.setattr(np.random, "default_rng", forbidden)
    numpy_state, random_state = np.random.get_state(), random.getstate()
    yield fake
    after = np.random.get_state()
    assert all(np.array_equal(a, b) for a, b in zip(numpy_state, after, strict=True))
    assert random.getstate() == random_state, "the random module's state was used"


def test_helpers_draw_from_os_entropy(entropy: FakeEntropy) -> None:
    words = uniform_words(5)
    assert words.dtype == np.uint32 and entropy.used == 20
    assert 0 <= uniform_word() < SCALE and 0 <= uniform_below(10) < 10
    draws = uniform_below_many(6, 1000)
    assert draws.dtype == np.int64 and set(draws.tolist()) == set(range(6))
    assert len(codec.new_report_id()) == 16


def test_uniform_below_many_rejects_the_biased_tail(monkeypatch: pytest.MonkeyPatch) -> None:
    # n = 3: 2**32 − 1 = 3·1431655765 is the first word past the last full cycle
    words = np.array([SCALE - 1, 5, SCALE - 2, 7] + [0] * 100, dtype=np.uint32)
    monkeypatch.setattr(os, "urandom", lambda count: words.tobytes()[:count])
    assert uniform_below_many(3, 3).tolist() == [5 % 3, (SCALE - 2) % 3, 7 % 3]


def _default_outputs(case: Case, mechanism: Any, repeat: int) -> list[Any]:
    singles = [mechanism.privatize(v) for _ in range(repeat) for v in case.values]
    batch = batch_reports(mechanism, mechanism.privatize_many(list(case.values) * repeat))
    return [output_key(mechanism, r) for r in singles + batch]


@pytest.mark.parametrize("case", conformance_cases(), ids=str)
def test_default_noise_comes_only_from_os_entropy(case: Case, entropy: FakeEntropy) -> None:
    mechanism = case.build()
    first = _default_outputs(case, mechanism, repeat=10)
    assert entropy.used > 0
    entropy.stream, entropy.used = FakeEntropy(b"first").stream, 0
    assert _default_outputs(case, mechanism, repeat=10) == first  # nothing else is random
    entropy.stream, entropy.used = FakeEntropy(b"second").stream, 0
    assert _default_outputs(case, mechanism, repeat=10) != first


THRESHOLDS = [
    1,
    0xFF,
    0x00FF_0000,
    0x0100_0000,
    0x0123_4567,
    0x7FFF_FFFF,
    0x8000_0000,
    0xABCD_EF01,
    0xFFFF_FFFF,
]


@pytest.mark.parametrize("threshold", THRESHOLDS, ids=hex)
@pytest.mark.parametrize("size", [3000, 200_000], ids=["tie-loop", "vectorized-ties"])
def test_secure_bernoulli_flags_have_probability_t_over_2_32(
    threshold: int, size: int, entropy: FakeEntropy
) -> None:
    """Flags decided on the first byte, by ties, or by deep ties all have rate T/2^32."""
    p = threshold / SCALE
    draws = 0
    hits = 0
    while draws < 2_000_000:  # enough trials that a wrong tie rule shows at > 5 SD
        hits += int(np.count_nonzero(bernoulli_flags(size, threshold)))
        packed = bernoulli_packed(size, threshold)
        assert len(packed) == (size + 7) // 8
        hits += int(np.unpackbits(np.frombuffer(bytes(packed), np.uint8), count=size).sum())
        draws += 2 * size
    assert abs(hits - draws * p) < 5 * math.sqrt(draws * p * (1 - p)) + 1


def test_seeded_bernoulli_flags_compare_the_same_words() -> None:
    flags = bernoulli_flags(1000, 0x4000_0000, np.random.default_rng(3))
    words = uniform_words(1000, np.random.default_rng(3))
    assert np.array_equal(flags, words < 0x4000_0000)
    packed = bernoulli_packed(1000, 0x4000_0000, np.random.default_rng(3))
    assert bytes(packed) == np.packbits(words < 0x4000_0000).tobytes()


@pytest.mark.parametrize("threshold", [-1, SCALE])
def test_bernoulli_thresholds_outside_32_bits_are_refused(threshold: int) -> None:
    with pytest.raises(ValueError, match="threshold"):
        bernoulli_flags(4, threshold)


@pytest.mark.parametrize("n", [3, 7, 1000, 2**31 + 1])
def test_secure_uniform_below_is_uniform(n: int, entropy: FakeEntropy) -> None:
    singles = np.array([uniform_below(n) for _ in range(20_000)])
    many = uniform_below_many(n, 20_000)
    for draws in (singles, many):
        assert draws.min() >= 0 and draws.max() < n
        bins = min(n, 10)  # equal-probability bins (exactly, or to 1e-9 for the largest n)
        counts = np.bincount(draws * bins // n, minlength=bins)
        assert chisquare(counts).pvalue > 1e-4


def test_row_col_and_word_take_one_read_of_three_words(entropy: FakeEntropy) -> None:
    stream = entropy.stream
    row, col, word = row_col_and_word(1000, 64)
    assert entropy.used == 12
    expected = [int.from_bytes(stream[i : i + 4], "little") for i in (0, 4, 8)]
    assert (row, col, word) == (expected[0] % 1000, expected[1] % 64, expected[2])


def test_row_col_and_word_redraw_a_rejected_word(monkeypatch: pytest.MonkeyPatch) -> None:
    # n = 3: 2**32 − 1 is past the last full cycle, so the row word is rejected and the
    # row comes from a fresh draw; the column and flip words are kept as read.
    words = np.array([SCALE - 1, 13, 99, 7], dtype=np.uint32).tobytes()
    reads = iter([words[:12], words[12:]])
    monkeypatch.setattr(os, "urandom", lambda count: next(reads)[:count])
    assert row_col_and_word(3, 8) == (7 % 3, 13 % 8, 99)


def test_seeded_row_col_and_word_draw_like_the_single_helpers() -> None:
    first = row_col_and_word(5, 16, np.random.default_rng(4))
    rng = np.random.default_rng(4)
    assert first == (uniform_below(5, rng), uniform_below(16, rng), uniform_word(rng))


@pytest.mark.parametrize("n", [3, 1000, 2**31 + 1])
def test_secure_row_col_and_word_are_uniform(n: int, entropy: FakeEntropy) -> None:
    draws = np.array([row_col_and_word(n, 8) for _ in range(20_000)])
    for column, size in ((draws[:, 0], n), (draws[:, 1], 8), (draws[:, 2], SCALE)):
        assert column.min() >= 0 and column.max() < size
        bins = min(size, 10)  # equal-probability bins, as in the uniform_below test
        assert chisquare(np.bincount(column * bins // size, minlength=bins)).pvalue > 1e-4


@pytest.mark.parametrize(("keep", "lie"), [(5, 5), (4, 5)])
def test_thresholds_that_do_not_separate_are_refused(keep: int, lie: int) -> None:
    check_implementable(6, 5)
    with pytest.raises(ParameterError, match="epsilon is too small to implement"):
        check_implementable(keep, lie)
