"""Closed forms the simulations compare with, beyond those in ldp_telemetry.shared.accuracy.

Symbols: epsilon the (effective) privacy parameter, n reports, f(d) the count of value d,
k sketch rows, m buckets, prior π = P(secret = 1).

- Laplace mechanism (Dwork et al., TCC 2006): a count (sensitivity 1) plus Laplace(1/ε)
  noise has standard deviation √2/ε whatever n is.
- Bayesian reading of ε-DP (the seeds' version; Kasiviswanathan & Smith 2014): for any
  output y, posterior odds ≤ e^ε · prior odds, so
  π/(π + e^ε(1−π)) ≤ P(secret = 1 | y) ≤ e^ε π/(e^ε π + 1 − π).
- Sketch collisions (docs/design.md): averaged over the hash family, a count's mean squared
  error is shared/ldp_telemetry/shared/accuracy's variance plus Σ_{d'≠d} f(d')(f(d')−1)/(k(m−1)).
  With one fixed hash family that extra term is a per-item bias, which more rows k shrink. The noise
  left around that bias is shared/ldp_telemetry/shared/accuracy's variance less (n − f(d))/(k(m−1)):
  with few rows a value that collides with d in a row always does, which removes a little randomness
  (both for CMS and HCMS; the fraction r of rows where d' meets d has E[r(1−r)] =
  (1/m)(1−1/m)(1−1/k)).
"""

from __future__ import annotations

import math

import numpy as np


def laplace_count_sd(epsilon: float) -> float:
    """Return the SD √2/ε of a count released with Laplace(1/ε) noise."""
    return math.sqrt(2.0) / epsilon


def posterior_bounds(prior: np.ndarray, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """Return the lowest and highest posterior P(secret = 1 | output) ε-DP allows."""
    prior = np.asarray(prior, dtype=float)
    growth = math.exp(epsilon)
    low = prior / (prior + growth * (1.0 - prior))
    high = growth * prior / (growth * prior + 1.0 - prior)
    return low, high


def rr_posterior(prior: np.ndarray, p11: float, p10: float, answer: int) -> np.ndarray:
    """Return P(secret = 1 | answer) by Bayes' rule for RR with P(1|1)=p11, P(1|0)=p10."""
    prior = np.asarray(prior, dtype=float)
    like_one, like_zero = (p11, p10) if answer == 1 else (1.0 - p11, 1.0 - p10)
    return like_one * prior / (like_one * prior + like_zero * (1.0 - prior))


def collision_variance(other_counts: np.ndarray, m: int, k: int) -> float:
    """Return Σ f(f−1)/(k(m−1)) over the other values: the hash-collision term of a count."""
    f = np.asarray(other_counts, dtype=float)
    return float(np.sum(f * (f - 1.0)) / (k * (m - 1)))


def sketch_noise_variance(closed_form: float, n: int, count: int, m: int, k: int) -> float:
    """Return the variance around a fixed hash family's bias, from shared's closed form."""
    return closed_form - (n - count) / (k * (m - 1))
