"""Generalized randomized response specifics: the word-to-index map and the estimator."""

from __future__ import annotations

import io
import os

import numpy as np
import pytest
from scipy.stats import chisquare

from ldp_telemetry.shared import GeneralizedRandomizedResponse

SCALE = 2**32


def test_every_other_value_gets_exactly_t_words() -> None:
    grr = GeneralizedRandomizedResponse(epsilon=1.0, domain=["a", "b", "c", "d"])
    t = grr.threshold_other
    words = np.array([0, t - 1, t, 2 * t - 1, 2 * t, 3 * t - 1, 3 * t, SCALE - 1], np.uint32)
    for truth, expected in [
        (0, [1, 1, 2, 2, 3, 3, 0, 0]),
        (2, [0, 0, 1, 1, 3, 3, 2, 2]),
        (3, [0, 0, 1, 1, 2, 2, 3, 3]),
    ]:
        out = grr._from_words(np.full(len(words), truth), words)
        assert out.tolist() == expected
    assert grr.threshold_keep + 3 * t == SCALE and grr.threshold_keep > t


def test_keep_and_lie_probabilities() -> None:
    grr = GeneralizedRandomizedResponse(epsilon=1.0, domain=["a", "b", "c"])
    q = 1 / (np.e + 2)
    assert q <= grr.q < q + 1 / SCALE  # lie probability rounded up by < 1 step
    assert grr.p + 2 * grr.q == 1


def test_estimate_inverts_the_report_counts() -> None:
    grr = GeneralizedRandomizedResponse(epsilon=2.0, domain=["a", "b", "c"])
    sums = grr.new_sums()
    sums.add_many(np.array([0] * 500 + [1] * 300 + [2] * 200))
    estimates = grr.estimate(sums)
    assert estimates.values == ("a", "b", "c")
    expected = (np.array([500, 300, 200]) - 1000 * grr.q) / (grr.p - grr.q)
    assert estimates.estimate == pytest.approx(expected, rel=1e-12)
    assert estimates.estimate.sum() == pytest.approx(1000, rel=1e-12)
    assert grr.estimate(sums, ["c", "a"]).estimate == pytest.approx(expected[[2, 0]])


def test_single_reports_add_up_like_batches() -> None:
    grr = GeneralizedRandomizedResponse(epsilon=2.0, domain=["a", "b", "c"])
    rng = np.random.default_rng(1)
    reports = [grr.privatize(v, rng) for v in ["a", "b", "c"] * 20]
    assert all(isinstance(r, int) and 0 <= r < 3 for r in reports)
    one, many = grr.new_sums(), grr.new_sums()
    for r in reports:
        one.add(r)
    many.add_many(np.array(reports))
    assert one == many


def test_stack_gives_the_int64_batch_add_many_takes() -> None:
    grr = GeneralizedRandomizedResponse(epsilon=2.0, domain=["a", "b", "c"])
    batch = grr.stack([2, 0, 2, 1])
    assert batch.dtype == np.int64 and batch.tolist() == [2, 0, 2, 1]
    sums = grr.new_sums()
    sums.add_many(batch)
    assert sums.table[0].tolist() == [1, 1, 2]


def test_estimate_without_candidates_covers_the_domain() -> None:
    grr = GeneralizedRandomizedResponse(epsilon=2.0, domain=["a", "b", "c"])
    sums = grr.new_sums()
    sums.add_many(np.array([0] * 5 + [2] * 3))
    default, explicit = grr.estimate(sums, None), grr.estimate(sums, ["a", "b", "c"])
    assert default.values == explicit.values == ("a", "b", "c")
    assert np.array_equal(default.estimate, explicit.estimate)


@pytest.mark.parametrize("d", [2, 4, 7])
def test_scalar_privatize_follows_the_vectorized_law_word_by_word(
    d: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """privatize (plain ints) maps every CSPRNG word to the index _from_words gives."""
    grr = GeneralizedRandomizedResponse(epsilon=1.0, domain=[f"v{i}" for i in range(d)])
    t = grr.threshold_other
    words = sorted({0, 1, SCALE - 1} | {c * t + e for c in range(1, d) for e in (-1, 0, 1)})
    words = [w for w in words if 0 <= w < SCALE]
    for truth, value in enumerate(grr.domain):
        stream = b"".join(w.to_bytes(4, "little") for w in words)
        monkeypatch.setattr(os, "urandom", io.BytesIO(stream).read)
        singles = [grr.privatize(value) for _ in words]
        expected = grr._from_words(np.full(len(words), truth), np.array(words, np.uint32))
        assert singles == expected.tolist()
        assert all(type(r) is int for r in singles)


def test_seeded_scalar_and_batch_privatize_agree_in_distribution() -> None:
    grr = GeneralizedRandomizedResponse(epsilon=0.5, domain=["a", "b", "c", "d", "e"])
    rng = np.random.default_rng(9)
    singles = np.bincount([grr.privatize("c", rng) for _ in range(50_000)], minlength=5)
    expected = 50_000 * np.array([grr.q, grr.q, grr.p, grr.q, grr.q])
    assert chisquare(singles, expected).pvalue > 1e-4
