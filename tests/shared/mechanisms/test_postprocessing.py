"""Norm-Sub: non-negative counts that sum to n, the estimates shifted by one δ."""

from __future__ import annotations

import numpy as np
import pytest

from ldp_telemetry.shared.mechanisms.postprocessing import norm_sub


def test_a_small_case_by_hand() -> None:
    # the top two stay (5 - 1, 3 - 1); -2 - 1 would be negative, so it is clipped to 0
    assert norm_sub(np.array([5.0, 3.0, -2.0]), 6).tolist() == [4.0, 2.0, 0.0]


@pytest.mark.parametrize("seed", range(20))
def test_the_result_is_a_non_negative_shift_that_sums_to_n(seed: int) -> None:
    rng = np.random.default_rng(seed)
    counts = rng.normal(100, 80, size=int(rng.integers(2, 50)))
    total = float(rng.uniform(1, 5000))
    out = norm_sub(counts, total)
    assert out.min() >= 0 and out.sum() == pytest.approx(total)
    kept = out > 0
    shifts = out[kept] - counts[kept]
    assert np.allclose(shifts, shifts[0])  # one δ for every value kept
    assert (counts[~kept] + shifts[0] <= 1e-9).all()  # and it would not lift the others


def test_no_values_give_no_counts() -> None:
    assert norm_sub(np.array([]), 10).size == 0
