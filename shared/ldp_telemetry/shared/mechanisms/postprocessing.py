"""Post-processing of estimates over a whole domain: consistency after the estimator.

Norm-Sub (Wang et al., "Locally Differentially Private Frequency Estimation with
Consistency", NDSS 2020) is the one used: asked with ``"normalize": true`` (PROTOCOL.md), and
by the poisoning simulation as a defence. It uses only the estimates and n, so it costs no
privacy.
"""

from __future__ import annotations

import numpy as np


def norm_sub(counts: np.ndarray, total: float) -> np.ndarray:
    """Return the counts shifted by one δ and clipped at 0 so that they sum to ``total``.

    Norm-Sub (Wang et al., "Locally Differentially Private Frequency Estimation with
    Consistency", NDSS 2020): the projection onto non-negative counts summing to n. It
    makes estimates over a whole domain consistent and caps what fake reports can add
    (every count at most n), at the price of a bias; it needs every value's estimate.
    """
    x = np.asarray(counts, dtype=float)
    if x.size == 0:
        return x
    ordered = np.sort(x)[::-1]
    sizes = np.arange(1, x.size + 1)
    shifts = (total - np.cumsum(ordered)) / sizes  # δ if the top ``size`` values stay > 0
    kept = ordered + shifts > 0
    size = int(np.flatnonzero(kept)[-1]) + 1 if kept.any() else x.size
    return np.maximum(x + shifts[size - 1], 0.0)
