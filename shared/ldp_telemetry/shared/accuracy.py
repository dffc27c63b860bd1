"""Closed-form variances of one estimated count, for every mechanism.

Symbols: ``n`` reports in all, ``count`` of them hold the value being estimated, epsilon
the *effective* epsilon (the one implemented). Each function gives the exact variance over
the mechanism's noise for a fixed population (the devices that reported), with the hash
family fixed; ``count=0`` gives docs/design.md's rare-item ("leading") form.

- RR (Warner 1965; the seeds' alpha/beta form): Var = [c·P11(1−P11) + (n−c)·P10(1−P10)] / α²,
  α = P11 − P10. Sampling the population instead gives n·λ(1−λ)/α², ``rr_sampling_variance``.
- GRR / direct encoding (Wang et al., USENIX Security 2017):
  [c·p(1−p) + (n−c)·q(1−q)] / (p−q)², p = e^ε/(e^ε+d−1), q = 1/(e^ε+d−1).
- CMS (Apple, "Learning with Privacy at Scale", 2017), flip probability q, c_ε = 1/(1−2q):
  (m/(m−1))²·[n·(c_ε²−1)/4 + (n−c)·(1/m)(1−1/m)]: noise plus the chance that another
  value's row hash collides with this one's.
- OLH (Wang et al., USENIX Security 2017), g buckets, keep-truth p:
  [c·p(1−p) + (n−c)·(1/g)(1−1/g)] / (p − 1/g)².
- HCMS (same paper), flip probability p, c_ε = 1/(1−2p): (m/(m−1))²·[n·c_ε² − c − (n−c)/m²].
"""

from __future__ import annotations

import numpy as np


def rr_count_variance(n: int, count: np.ndarray | float, p11: float, p10: float) -> np.ndarray:
    """Return Var of the RR count estimate for a fixed population with ``count`` yeses."""
    count = np.asarray(count, dtype=float)
    noise = count * p11 * (1 - p11) + (n - count) * p10 * (1 - p10)
    return noise / (p11 - p10) ** 2


def rr_sampling_variance(n: int, proportion: float, p11: float, p10: float) -> float:
    """Return n·λ(1−λ)/α²: the RR count variance when respondents are sampled."""
    lam = proportion * p11 + (1 - proportion) * p10
    return n * lam * (1 - lam) / (p11 - p10) ** 2


def grr_count_variance(n: int, count: np.ndarray | float, p: float, q: float) -> np.ndarray:
    """Return Var of a GRR count estimate (p: keep-truth, q: each other value)."""
    count = np.asarray(count, dtype=float)
    return (count * p * (1 - p) + (n - count) * q * (1 - q)) / (p - q) ** 2


def cms_count_variance(n: int, count: np.ndarray | float, m: int, flip: float) -> np.ndarray:
    """Return Var of a CMS count estimate with bit-flip probability ``flip``."""
    count = np.asarray(count, dtype=float)
    c_eps = 1.0 / (1.0 - 2.0 * flip)
    noise = n * (c_eps**2 - 1.0) / 4.0
    collisions = (n - count) * (1.0 / m) * (1.0 - 1.0 / m)
    return (m / (m - 1)) ** 2 * (noise + collisions)


def hcms_count_variance(n: int, count: np.ndarray | float, m: int, flip: float) -> np.ndarray:
    """Return Var of an HCMS count estimate with bit-flip probability ``flip``."""
    count = np.asarray(count, dtype=float)
    c_eps = 1.0 / (1.0 - 2.0 * flip)
    return (m / (m - 1)) ** 2 * (n * c_eps**2 - count - (n - count) / m**2)


def olh_count_variance(n: int, count: np.ndarray | float, g: int, p: float) -> np.ndarray:
    """Return Var of an OLH count estimate (g buckets, keep-truth probability p).

    A report of the value lands in its bucket with probability p; any other report with
    probability exactly 1/g (over its hash row and its noise).
    """
    count = np.asarray(count, dtype=float)
    other = 1.0 / g
    return (count * p * (1 - p) + (n - count) * other * (1 - other)) / (p - other) ** 2


def sketch_collision_variance(
    pairs: np.ndarray, k: int, m: int, domain_pairs: float | None = None
) -> np.ndarray:
    """Return the mean square of each count's hash-collision bias (docs/design.md, hash collisions).

    With k fixed row hashes, another value d' lands in d's bucket in about k/m rows and its
    f(d') reports shift d's estimate by a fixed amount: a bias, not noise. Over hash
    families it has mean 0 and variance Σ_{d'≠d} f(d')(f(d')−1)/(k(m−1)). ``pairs`` holds
    f(f−1) for each value known (true, or estimated without bias); ``domain_pairs``, when
    given, estimates Σ_d f(d)(f(d)−1) over every value, so heavy values missing from
    ``pairs`` count too (the larger of the two sums is used). Larger k shrinks the term.
    """
    pairs = np.asarray(pairs, dtype=float)
    total = pairs.sum() if domain_pairs is None else max(pairs.sum(), domain_pairs)
    return np.maximum(total - pairs, 0.0) / (k * (m - 1))
