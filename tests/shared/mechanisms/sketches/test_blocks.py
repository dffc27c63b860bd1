"""The estimator reads sketch rows in blocks whose size is bounded whatever m is."""

from __future__ import annotations

import numpy as np
import pytest

from ldp_telemetry.shared import CountMeanSketch, HadamardCountMeanSketch
from ldp_telemetry.shared.mechanisms.sketches.base import BLOCK_CELLS


class RecordingTable:
    """A stand-in for ``sums.table`` that serves zero rows and records each block's shape."""

    def __init__(self, rows: int, width: int) -> None:
        self.shape = (rows, width)
        self.blocks: list[int] = []

    def __getitem__(self, rows: slice) -> np.ndarray:
        start, stop, _ = rows.indices(self.shape[0])
        self.blocks.append(stop - start)
        return np.zeros((stop - start, self.shape[1]), dtype=np.int64)


class RecordingSums:
    def __init__(self, rows: int, width: int) -> None:
        self.total = 1000
        self.table = RecordingTable(rows, width)


@pytest.mark.parametrize("sketch", [CountMeanSketch, HadamardCountMeanSketch])
@pytest.mark.parametrize("candidates", [1, 5000])
def test_row_blocks_stay_bounded_for_wide_sketches(sketch: type, candidates: int) -> None:
    # Regression: blocks were sized by the candidate count alone, so one candidate on a
    # k=8192, m=65536 sketch read a 4 GiB block.
    mechanism = sketch(epsilon=4.0, k=512, m=65536, hash_seed=1)
    sums = RecordingSums(512, 65536)
    values = [f"v{i}" for i in range(candidates)]
    estimates = mechanism.estimate(sums, values)
    assert len(estimates.estimate) == candidates
    assert sum(sums.table.blocks) == 512
    assert max(sums.table.blocks) * 65536 <= BLOCK_CELLS
