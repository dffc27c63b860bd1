"""Small mechanisms and exhaustive output lists used by the tests of shared/.

Each mechanism is built with parameters small enough that every possible report can be
listed, so probabilities can be checked exactly (Fractions) rather than sampled.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ldp_telemetry.shared import (
    CountMeanSketch,
    GeneralizedRandomizedResponse,
    HadamardCountMeanSketch,
    HadamardReport,
    HashedReport,
    OptimizedLocalHashing,
    RandomizedResponse,
    SketchReport,
)
from ldp_telemetry.shared.mechanisms.hh.mechanism import HeavyHitters, LevelReport
from ldp_telemetry.shared.mechanisms.lifetime.loloha import LocalHashingLongitudinal
from ldp_telemetry.shared.mechanisms.lifetime.spec import LocalHashingSpec
from ldp_telemetry.shared.mechanisms.longitudinal import Longitudinal, LongitudinalSpec
from ldp_telemetry.shared.mechanisms.numeric.estimate import DEFAULT_QUERY
from ldp_telemetry.shared.mechanisms.numeric.mechanism import NumericBase, SquareWave
from ldp_telemetry.shared.mechanisms.oue import OptimizedUnaryEncoding
from ldp_telemetry.shared.mechanisms.ss import SubsetSelection

Mechanism = Any  # one of the mechanism classes
STRINGS = ("apple", "banana", "cherry", "damson", "elder", "fig", "grape")


@dataclass(frozen=True)
class Case:
    """A small mechanism with the inputs to exercise it on."""

    name: str
    build: Callable[[], Mechanism]
    values: tuple[Any, ...]
    # What estimate() is asked (default: the values) and answers for candidates=None
    # (default: the values); a numeric task is asked statistics, not values.
    queries: tuple[Any, ...] | None = None
    default_queries: tuple[Any, ...] | None = None

    @property
    def candidates(self) -> list[Any]:
        """Return what to pass to estimate() as candidates."""
        return list(self.values if self.queries is None else self.queries)

    def __str__(self) -> str:
        return self.name


def conformance_cases() -> list[Case]:
    """Return one small, fully enumerable instance of each mechanism."""
    return [
        Case("rr", lambda: RandomizedResponse(epsilon=1.5), (True, False)),
        Case(
            "grr",
            lambda: GeneralizedRandomizedResponse(epsilon=1.5, domain=STRINGS[:4]),
            STRINGS[:4],
        ),
        Case("cms", lambda: CountMeanSketch(epsilon=3.0, k=3, m=5, hash_seed=7), STRINGS[:4]),
        Case(
            "hcms", lambda: HadamardCountMeanSketch(epsilon=3.0, k=2, m=4, hash_seed=7), STRINGS[:4]
        ),
        Case("olh", lambda: OptimizedLocalHashing(epsilon=1.5, k=3, hash_seed=7), STRINGS[:4]),
        Case("hh", lambda: tiny_heavy_hitters(epsilon=3.0), HH_VALUES),
        Case(
            "numeric",
            lambda: SquareWave(epsilon=1.5, lo=0.0, hi=10.0, buckets=4, scale="linear"),
            NUMERIC_VALUES,
            queries=("mean", "p50", "p90"),
            default_queries=DEFAULT_QUERY,
        ),
        Case("oue", lambda: OptimizedUnaryEncoding(epsilon=1.5, domain=STRINGS[:4]), STRINGS[:4]),
        Case("ss", lambda: SubsetSelection(epsilon=0.5, domain=STRINGS[:5]), STRINGS[:5]),
        *(
            Case(f"{case.name}-longitudinal", _longitudinal(case.build), case.values)
            for case in (
                Case("rr", lambda: RandomizedResponse(epsilon=3.0), (True, False)),
                Case(
                    "grr",
                    lambda: GeneralizedRandomizedResponse(epsilon=3.0, domain=STRINGS[:4]),
                    STRINGS[:4],
                ),
                Case(
                    "cms", lambda: CountMeanSketch(epsilon=4.0, k=3, m=5, hash_seed=7), STRINGS[:4]
                ),
                Case(
                    "hcms",
                    lambda: HadamardCountMeanSketch(epsilon=4.0, k=2, m=4, hash_seed=7),
                    STRINGS[:4],
                ),
            )
        ),
        Case("grr-loloha", _loloha, STRINGS[:4]),
    ]


def _loloha() -> Longitudinal:
    """Return a small LOLOHA layer over grr (g = 3 buckets, 3 rows)."""
    spec = LocalHashingSpec(3.0, 1.0, g=3, seeds=3, hash_seed=7)
    domain = GeneralizedRandomizedResponse(epsilon=3.0, domain=STRINGS[:4])
    return LocalHashingLongitudinal(domain, spec, identity="conformance")


def _longitudinal(build: Callable[[], Any], flip: float = 0.1) -> Callable[[], Longitudinal]:
    """Return a builder of ``build()``'s mechanism as a longitudinal task's (flip 0.1)."""

    def longitudinal() -> Longitudinal:
        permanent = build()
        spec = LongitudinalSpec(permanent.epsilon, flip=flip)
        return Longitudinal(permanent, spec, identity=repr(permanent))

    return longitudinal


NUMERIC_VALUES = (0.5, 3.0, 6.0, 9.5)  # one per bucket of [0, 10] in 4


HH_VALUES = ("a", "ab", "bab", "bb")


def tiny_heavy_hitters(epsilon: float, hash_seed: int = 7) -> HeavyHitters:
    """Return an hh task small enough to enumerate: G = 3 levels of a 2 × 3 sketch."""
    return HeavyHitters(
        epsilon=epsilon, k=2, m=3, hash_seed=hash_seed, alphabet="ab", max_length=3, first=1, step=1
    )


def all_outputs(mechanism: Mechanism) -> list[Any]:
    """Return every report the mechanism can produce."""
    if isinstance(mechanism, Longitudinal):
        return all_outputs(mechanism.permanent)
    if isinstance(mechanism, RandomizedResponse):
        return [0, 1]
    if isinstance(mechanism, NumericBase):
        return list(range(mechanism.outputs))
    if isinstance(mechanism, GeneralizedRandomizedResponse):
        return list(range(mechanism.d))
    if isinstance(mechanism, OptimizedUnaryEncoding):
        return [
            np.packbits(np.array(bits, dtype=np.uint8)).tobytes()
            for bits in itertools.product((0, 1), repeat=mechanism.d)
        ]
    if isinstance(mechanism, SubsetSelection):
        return list(itertools.combinations(range(mechanism.d), mechanism.omega))
    if isinstance(mechanism, CountMeanSketch):
        return [
            SketchReport(row, np.packbits(np.array(bits, dtype=np.uint8)).tobytes())
            for row in range(mechanism.k)
            for bits in itertools.product((0, 1), repeat=mechanism.m)
        ]
    if isinstance(mechanism, HeavyHitters):
        return [
            LevelReport(level, row, np.packbits(np.array(bits, dtype=np.uint8)).tobytes())
            for level in range(mechanism.level_count)
            for row in range(mechanism.k)
            for bits in itertools.product((0, 1), repeat=mechanism.m)
        ]
    if isinstance(mechanism, OptimizedLocalHashing):
        return [
            HashedReport(row, index) for row in range(mechanism.k) for index in range(mechanism.g)
        ]
    if isinstance(mechanism, HadamardCountMeanSketch):
        return [
            HadamardReport(row, col, bit)
            for row in range(mechanism.k)
            for col in range(mechanism.m)
            for bit in (0, 1)
        ]
    raise TypeError(f"unknown mechanism {mechanism!r}")


def output_key(mechanism: Mechanism, report: Any) -> Any:
    """Return a hashable key identifying one report (for counting outcomes)."""
    if isinstance(report, SketchReport | HadamardReport | HashedReport | LevelReport | tuple):
        return report
    if isinstance(report, bytes | np.ndarray):  # oue: packed bits
        return bytes(report)
    return int(report)


def batch_reports(mechanism: Mechanism, batch: Any) -> list[Any]:
    """Return the single reports of a ``privatize_many`` batch."""
    if isinstance(mechanism, Longitudinal):
        return batch_reports(mechanism.permanent, batch)
    if isinstance(
        mechanism, CountMeanSketch | HadamardCountMeanSketch | OptimizedLocalHashing | HeavyHitters
    ):
        return [batch.report(i) for i in range(len(batch))]
    if isinstance(mechanism, OptimizedUnaryEncoding):
        return [row.tobytes() for row in batch]
    if isinstance(mechanism, SubsetSelection):
        return [tuple(int(i) for i in row) for row in batch]
    return [int(x) for x in batch]


def batch_columns(batch: Any) -> list[np.ndarray]:
    """Return the arrays of a ``privatize_many`` batch (one for rr and grr)."""
    if isinstance(batch, np.ndarray):
        return [batch]
    return [getattr(batch, f.name) for f in dataclasses.fields(batch)]


def worst_case_ratio(mechanism: Mechanism, values: Sequence[Any]) -> Fraction:
    """Return max over pairs of distinct values and all outputs of P(o|x) / P(o|y)."""
    outputs = all_outputs(mechanism)
    table = {v: [mechanism.output_probability(v, o) for o in outputs] for v in values}
    worst = Fraction(0)
    for x, y in itertools.permutations(values, 2):
        for p_x, p_y in zip(table[x], table[y], strict=True):
            assert p_x > 0 and p_y > 0, "every output must be possible under every input"
            worst = max(worst, p_x / p_y)
    return worst


def fraction_log(value: Fraction) -> float:
    """Return ln(value) for a positive Fraction, even when it overflows a float."""
    return math.log(value.numerator) - math.log(value.denominator)


class FakeEntropy:
    """A deterministic stand-in for the OS CSPRNG: SHAKE-256 of a seed, read in order.

    Installed over ``os.urandom`` and ``random._urandom`` (the alias ``secrets`` and
    ``random.SystemRandom`` read through), it makes the rng=None path reproducible and
    lets tests count how much OS entropy was drawn.
    """

    def __init__(self, seed: bytes, size: int = 1 << 22) -> None:
        self.stream = hashlib.shake_256(seed).digest(size)
        self.used = 0

    def __call__(self, count: int) -> bytes:
        if self.used + count > len(self.stream):
            raise AssertionError("the fake entropy stream is exhausted")
        chunk = self.stream[self.used : self.used + count]
        self.used += count
        return chunk
