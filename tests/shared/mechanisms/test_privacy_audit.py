"""A held-out audit of oue and ss: epsilon bounded from samples, not from output_probability.

The exact tests (test_privacy.py) trust ``output_probability``; this one trusts only what
``privatize_many`` sends. From seeded draws per input it counts each output and takes a
Clopper–Pearson lower bound on every likelihood ratio P(o|x)/P(o|y) (Bonferroni over all
ratios): no lower bound may exceed e^ε, and the point estimate of the worst ratio must be
near e^ε_eff (the mechanism spends what it claims). A randomizer that leaks (oue with its
true bit kept with 0.9 instead of ½) fails the same audit.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from typing import Any

import numpy as np
import pytest
from scipy.stats import beta

from ldp_telemetry.shared.mechanisms.oue import OptimizedUnaryEncoding
from ldp_telemetry.shared.mechanisms.ss import SubsetSelection
from ldp_telemetry.shared.randomness import SCALE
from tests.shared.cases import STRINGS, batch_reports, output_key

DRAWS = 60_000
ALPHA = 1e-6  # family-wise: a correct mechanism fails with probability below this


def audit(mechanism: Any, values: tuple[str, ...], seed: int) -> tuple[float, float]:
    """Return (largest lower bound, largest point estimate) of P(o|x)/P(o|y) over x≠y, o."""
    counts = {}
    for index, value in enumerate(values):
        batch = mechanism.privatize_many([value] * DRAWS, np.random.default_rng([seed, index]))
        counts[value] = Counter(output_key(mechanism, r) for r in batch_reports(mechanism, batch))
    outputs = set().union(*counts.values())
    tests = len(outputs) * len(values) * (len(values) - 1)
    a = ALPHA / tests
    bound, point = 0.0, 0.0
    for x, y in itertools.permutations(values, 2):
        for o in outputs:
            cx, cy = counts[x][o], counts[y][o]
            low_x = beta.ppf(a / 2, cx, DRAWS - cx + 1) if cx else 0.0
            high_y = beta.ppf(1 - a / 2, cy + 1, DRAWS - cy) if cy < DRAWS else 1.0
            bound = max(bound, low_x / high_y)
            if cy >= 200:  # a well-estimated ratio
                point = max(point, cx / cy)
    return bound, point


@pytest.mark.parametrize(
    "mechanism",
    [
        OptimizedUnaryEncoding(epsilon=1.0, domain=STRINGS[:3]),
        SubsetSelection(epsilon=0.5, domain=STRINGS[:5]),
        SubsetSelection(epsilon=1.5, domain=STRINGS[:6]),
    ],
    ids=repr,
)
def test_sampled_ratios_stay_within_epsilon(mechanism: Any) -> None:
    values = mechanism.domain
    bound, point = audit(mechanism, values, seed=2026)
    assert bound <= math.exp(mechanism.epsilon)
    assert point == pytest.approx(math.exp(mechanism.effective_epsilon), rel=0.1)


class LeakyUnaryEncoding(OptimizedUnaryEncoding):
    """OUE whose true bit is kept with 0.9: ε is really ln(9(1−q)/q) > the claim."""

    def privatize_many(self, values: Any, rng: Any = None) -> np.ndarray:
        truth = self.indices(values)
        flags = rng.integers(0, SCALE, size=(len(truth), self.d)) < self.threshold_other
        flags[np.arange(len(truth)), truth] = rng.random(len(truth)) < 0.9
        return np.packbits(flags, axis=1)


def test_the_audit_catches_a_leak() -> None:
    leaky = LeakyUnaryEncoding(epsilon=1.0, domain=STRINGS[:3])
    bound, _ = audit(leaky, leaky.domain, seed=2026)
    assert bound > math.exp(leaky.epsilon)
