"""Square Wave's channel P(output | bucket), in products that cost O(outputs).

Shared by the reconstruction (:mod:`numeric_spline` through :mod:`numeric_estimate`) and
the EMS yardstick (:mod:`numeric_ems`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Channel:
    """Square Wave's P(output o | bucket i): ``near`` for i ≤ o < i + ``window``, else ``far``.

    Products with it cost O(outputs) through cumulative sums instead of a dense matrix,
    and take one distribution per row, so the bootstrap's refits run side by side.
    """

    buckets: int
    window: int
    near: float
    far: float

    @property
    def outputs(self) -> int:
        """Return how many outputs there are (d + 2w)."""
        return self.buckets + self.window - 1

    def forward(self, x: np.ndarray) -> np.ndarray:
        """Return each output's probability under the bucket distributions x (rows)."""
        pad = np.zeros((*x.shape[:-1], self.window - 1))
        sums = _cumulative(np.concatenate((pad, x, pad), axis=-1))
        inside = sums[..., self.window : self.window + self.outputs] - sums[..., : self.outputs]
        return self.far * x.sum(axis=-1, keepdims=True) + (self.near - self.far) * inside

    def backward(self, r: np.ndarray) -> np.ndarray:
        """Return r @ P: each bucket's sum of r over its window of outputs (rows)."""
        sums = _cumulative(r)
        inside = sums[..., self.window : self.window + self.buckets] - sums[..., : self.buckets]
        return self.far * r.sum(axis=-1, keepdims=True) + (self.near - self.far) * inside

    def dense(self) -> np.ndarray:
        """Return the transition matrix P[o, i] (for tests and small checks)."""
        return self.forward(np.eye(self.buckets)).T


def _cumulative(x: np.ndarray) -> np.ndarray:
    return np.concatenate((np.zeros((*x.shape[:-1], 1)), np.cumsum(x, axis=-1)), axis=-1)
