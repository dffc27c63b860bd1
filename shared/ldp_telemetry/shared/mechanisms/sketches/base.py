"""What the two count-mean sketches share: parameters, row hashes and the estimator.

Symbols (Apple, "Learning with Privacy at Scale", 2017): k sketch rows, m buckets per row,
n reports, f(d) the count of value d. Both sketches reduce a candidate d to

    f̂(d) = (m/(m−1)) · (c_ε · Σ_j X[j, h_j(d)] − offset · n − n/m)

where X is the mechanism's integer table (CMS: one-bit counts U; HCMS: the Walsh–Hadamard
transform of the signed sums S), so the sum over rows is gathered in chunks of
(candidates × rows) with numpy: no Python loop per candidate or per row. A subclass
supplies the three things that differ: ``row_transform`` (table rows to X), ``offset`` and
``noise_variance``.
"""

from __future__ import annotations

import copy
import secrets
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, fields, replace
from fractions import Fraction
from typing import Any, ClassVar, TypeVar

import numpy as np

from ldp_telemetry.shared.accuracy import sketch_collision_variance
from ldp_telemetry.shared.errors import ParameterError, ValueOutOfDomain
from ldp_telemetry.shared.estimates import DEFAULT_LEVEL, Estimates
from ldp_telemetry.shared.hashing import MAX_SEED, RowHashes, value_bytes, value_key, value_keys
from ldp_telemetry.shared.mechanisms import longitudinal
from ldp_telemetry.shared.mechanisms.base import (
    Batch,
    Mechanism,
    Option,
    ParamsBase,
    Plan,
    as_float,
    check_candidate_strings,
)
from ldp_telemetry.shared.mechanisms.longitudinal import LongitudinalSpec, Rerandomizable
from ldp_telemetry.shared.mechanisms.poisoning import Check, Reach, rows_test
from ldp_telemetry.shared.mechanisms.sketches.row_totals import RowTotals
from ldp_telemetry.shared.randomness import (
    SCALE,
    check_implementable,
    log_ratio,
    threshold_at_least,
)
from ldp_telemetry.shared.sums import RowSums, Sums, check_shape
from ldp_telemetry.shared.validation import check_epsilon, check_int
from ldp_telemetry.shared.wire import canonical_json

MAX_ROWS = 1 << 20
MAX_BUCKETS = 1 << 16
GATHER_ELEMENTS = 1 << 21  # bounds the rows fetched at once: rows × candidates ≤ this
GATHER_CHUNK = 1 << 17  # (candidates × rows) indices computed at once: 1 MiB, cache-sized
BLOCK_CELLS = 1 << 22  # bounds one block of rows × m: 32 MiB of int64, whatever m is


S = TypeVar("S", bound="Sketch")


class Sketch:
    """Parameters and hashing of a k × m sketch; subclasses add the randomizer."""

    name = ""
    report_bits = 0  # the payload's size on the wire (set by each sketch)
    offset = 0.0  # the estimator's offset (CMS: (c_ε − 1)/2)
    flip_threshold: int
    flip_exact: Fraction
    flip: float
    c_eps: float
    effective_epsilon: float

    def __init__(self, *, epsilon: float, k: int, m: int, hash_seed: int) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.k = check_int("k", k, 1, MAX_ROWS)
        self.m = check_int("m", m, 2, MAX_BUCKETS)
        self.hash_seed = check_int("hash_seed", hash_seed, 0, MAX_SEED)
        self.hashes = RowHashes(self.hash_seed, self.k, self.m)
        self.sums_shape = (self.k, self.m)
        self.row_totals = RowTotals()  # what estimates read, for the checks

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(epsilon={self.epsilon!r}, k={self.k}, m={self.m}, "
            f"hash_seed={self.hash_seed})"
        )

    def derived(self) -> dict[str, Any]:
        """Return the integers a device uses (published in the task JSON, PROTOCOL.md §3.4,
        §3.5): the threshold of a noisy bit."""
        return {"T": self.flip_threshold}

    changes = 1  # coordinates in which two values' reports differ before noise (cms: 2)

    def set_flip(self, epsilon: float) -> None:
        """Set the flip probability 1/(1+e^epsilon) per coordinate, as T/2^32 rounded up."""
        self.flip_threshold = threshold_at_least(1.0 / (1.0 + np.exp(epsilon)))
        check_implementable(SCALE - self.flip_threshold, self.flip_threshold)
        self.set_noise(Fraction(self.flip_threshold, SCALE))

    def set_noise(self, flip: Fraction) -> None:
        """Set a coordinate's exact flip probability and what derives from it: c_ε, the
        offset and the effective epsilon, ``changes``·ln((1−flip)/flip)."""
        self.flip_exact, self.flip = flip, float(flip)
        self.c_eps = 1.0 / (1.0 - 2.0 * self.flip)
        self.offset = self.offset_of(self.c_eps)
        ratio = (1 - flip) / flip
        self.effective_epsilon = self.changes * log_ratio(ratio.numerator, ratio.denominator)

    def offset_of(self, c_eps: float) -> float:
        """Return the estimator's offset for c_ε (0 unless a sketch says otherwise)."""
        return 0.0

    def attack_success(self, domain_size: int) -> float | None:
        """Return the uniform-prior Bayes adversary's top-1 success from one report over
        ``domain_size`` values (None: no closed form); each sketch gives its own."""
        return None

    # -- as a longitudinal task's permanent layer (ldp_telemetry.shared.mechanisms.longitudinal)
    # ---------

    def irr_threshold(self, flip: float) -> int:
        """Return the threshold flipping each noisy bit with probability ``flip`` (< 1/2)."""
        return longitudinal.flip_threshold(flip, 1, self.irr_limit())

    def irr_limit(self) -> int:
        """Return the threshold of a flip with probability 1/2 (reports are then noise)."""
        return SCALE // 2

    def compose_flip(self: S, threshold: int) -> S:
        """Return the sketch whose bits are this one's, each flipped again with T/2^32."""
        again, flip = Fraction(threshold, SCALE), self.flip_exact
        composed = copy.copy(self)
        composed.set_noise(longitudinal.flipped(flip, again))
        return composed

    def for_device(self: S, device_key: bytes) -> S:
        """Return self: every device privatizes alike."""
        return self

    def canonical(self, value: object) -> bytes:
        """Return the value's UTF-8 bytes (raise ValueOutOfDomain for a non-str)."""
        return value_bytes(value)

    def parse_candidates(self, raw: Any) -> list[str]:
        """Return the candidates: required, since a sketch does not know its domain."""
        return check_candidate_strings(raw)

    def new_sums(self) -> Sums:
        """Return an empty accumulator."""
        return self.sums_class(self.k, self.m)

    sums_class: type[Sums]

    def fold(self, batch: Batch) -> RowSums:
        """Return the sums of a batch over only the rows it touches (renumbered compactly)."""
        rows, compact = np.unique(batch.rows, return_inverse=True)
        sums = self.sums_class(len(rows), self.m)
        sums.add_many(replace(batch, rows=compact.astype(np.int64)))
        return RowSums(rows.astype(np.int64), sums.n, sums.table)

    def split_rows(self, batch: Batch, rows_per_part: int) -> Iterator[Batch]:
        """Yield the batch in parts whose rows fall in one block of ``rows_per_part``."""
        block = batch.rows // rows_per_part
        order = np.argsort(block, kind="stable")
        for part in np.split(order, np.flatnonzero(np.diff(block[order])) + 1):
            yield type(batch)(*(getattr(batch, column.name)[part] for column in fields(batch)))

    def key(self, value: str) -> int:
        """Return the task's 64-bit key of a value (raises ValueOutOfDomain for non-str)."""
        return value_key(value, self.hash_seed)

    def keys(self, values: Sequence[str]) -> np.ndarray:
        """Return the uint64 keys of many values."""
        if isinstance(values, str):
            raise ValueOutOfDomain("expected a sequence of str values, got one str")
        return value_keys(values, self.hash_seed)

    def estimate(
        self, sums: Sums, candidates: Sequence[str] | None = None, level: float = DEFAULT_LEVEL
    ) -> Estimates:
        """Estimate the count of each candidate (required: a sketch does not know its domain)."""
        if candidates is None:
            raise ParameterError(
                f"{self.name} needs candidates: a sketch does not know its domain, so pass "
                "the values to estimate, e.g. estimate(sums, candidates=['a', 'b'])"
            )
        check_shape(sums, self.k, self.m, self)
        n = sums.total
        squares = np.zeros(1)  # Σ of X's squared cells, gathered with the rows (one pass)
        # The table's total too, for the sums checks that follow (row_totals): one pass.
        read, done = self.row_totals.reader(sums)

        def block_of(rows: slice) -> np.ndarray:
            block = self.row_transform(read(rows))
            if self.second_moment:
                cells = np.asarray(block, dtype=float).ravel()
                squares[0] += cells @ cells
            return block

        gathered = self.gather(self.keys(candidates), block_of)
        done()
        estimate = self.debias(gathered, n)
        variance = self.noise_variance(n, np.clip(estimate, 0, n))
        pairs = None
        if self.second_moment:  # only then read the rows' report counts (a store query)
            pairs = self.domain_pairs(np.asarray(sums.n), float(squares[0]))
        return self.finish(candidates, estimate, variance, n, level, pairs)

    second_moment = False  # whether domain_pairs needs Σ of X's squares (olh)

    def domain_pairs(self, rows_n: np.ndarray, squares: float) -> float | None:
        """Return an unbiased estimate of Σ_d f(d)(f(d)−1) over the whole domain from each
        row's report count and Σ of X's squared cells (None: the sketch has none, and only
        the candidates' pairs count)."""
        return None

    def row_transform(self, block: np.ndarray) -> np.ndarray:
        """Return X's rows from a block of table rows (the identity unless overridden)."""
        return block

    # What one report adds to a candidate's X cell at most and at least (cms: a bit).
    report_extremes: ClassVar[tuple[int, int]] = (0, 1)

    def reach(self) -> Reach:
        """Return how far one report moves a count: debias of one report's X (0 elsewhere)."""
        low, high = self.report_extremes
        one = self.debias(np.array([low, high], dtype=np.int64), 1)
        return Reach(float(one[0]), float(one[1]))

    def check_sums(self, sums: Sums) -> list[Check]:
        """Return the row-spread test (honest devices draw their row uniformly)."""
        check = rows_test(sums.n)
        return [check] if check is not None else []

    def noise_variance(self, n: int, counts: np.ndarray) -> np.ndarray:
        """Return the privatization noise variance of each count's estimate."""
        raise NotImplementedError

    def answer_variance(self, estimates: Estimates) -> np.ndarray:
        """Return the noise variance of each answered count at its estimate (no collisions)."""
        n = estimates.n
        return self.noise_variance(n, np.clip(np.asarray(estimates.estimate, float), 0, n))

    def gather(self, keys: np.ndarray, row_block: Callable[[slice], np.ndarray]) -> np.ndarray:
        """Return Σ_j X[j, h_j(key)] per key, with X's rows supplied block by block.

        ``row_block`` is called once per block of rows (so a store can stream them); each
        block is read by chunks of keys small enough that the index matrix stays in cache.
        """
        total = np.zeros(len(keys), dtype=np.int64)
        rows_per_block = min(
            self.k,
            max(1, GATHER_ELEMENTS // max(1, len(keys))),
            8192,
            max(1, BLOCK_CELLS // self.m),
        )
        keys_per_chunk = max(1, GATHER_CHUNK // rows_per_block)
        for start in range(0, self.k, rows_per_block):
            rows = slice(start, min(self.k, start + rows_per_block))
            block = _narrow(np.ascontiguousarray(row_block(rows)).ravel())
            for first in range(0, len(keys), keys_per_chunk):
                part = slice(first, first + keys_per_chunk)
                index = self.hashes.flat_bucket_matrix(keys[part], rows, self.m)
                total[part] += np.take(block, index).sum(axis=1, dtype=np.int64)
        return total

    def debias(self, gathered: np.ndarray, n: int) -> np.ndarray:
        """Turn gathered row sums into unbiased counts."""
        m = self.m
        return (m / (m - 1)) * (self.c_eps * gathered - self.offset * n - n / m)

    def finish(
        self,
        values: Sequence[str],
        estimate: np.ndarray,
        variance: np.ndarray,
        n: int,
        level: float = DEFAULT_LEVEL,
        domain_pairs: float | None = None,
    ) -> Estimates:
        """Wrap counts and noise variances as Estimates, adding the collision term.

        The standard error also carries the expected hash-collision bias caused by the
        other values: the candidates' (f(f−1) estimated without bias as f̂² − f̂ − Var(f̂):
        squaring noisy estimates of rare values would inflate it), or, when larger, the
        whole domain's as ``domain_pairs`` estimates it from the sums, so values nobody
        asked about count too where the sketch can tell (olh).
        """
        pairs = estimate * estimate - estimate - variance
        collisions = sketch_collision_variance(pairs, self.k, self.m, domain_pairs)
        return Estimates.from_variance(list(values), estimate, variance + collisions, n, level)


@dataclass(frozen=True)
class SketchParams(ParamsBase):
    """epsilon, k rows, m buckets per row and the hash seed (drawn for a new task)."""

    epsilon: float | None = None
    k: int | None = None
    m: int | None = None
    hash_seed: int | None = None
    longitudinal: LongitudinalSpec | None = None  # an option of cms and hcms, not of hh

    options: ClassVar[tuple[Option, ...]] = (
        Option("epsilon", "number", "Privacy parameter."),
        Option("k", "integer", "Sketch rows (cms, hcms)."),
        Option("m", "integer", "Sketch width (cms, hcms; a power of two for hcms)."),
        Option(
            "hash_seed",
            "integer",
            "Leave out to have the server draw one; give it only to recreate a task's hash family.",
        ),
    )

    @classmethod
    def defaults_for_new_task(cls, given: dict[str, Any]) -> dict[str, Any]:
        """Draw a random hash seed unless one is given."""
        return with_hash_seed(given)

    def validate(self) -> None:
        """Check that every parameter is given; the mechanism checks their ranges."""
        object.__setattr__(self, "epsilon", as_float(self.epsilon))
        spec = longitudinal.check_epsilon_left_out(self.epsilon, self.longitudinal)
        object.__setattr__(self, "longitudinal", spec)
        if spec is None:
            self.require("epsilon")
        self.require("k", "m", "hash_seed")

    def built(self, sketch: Callable[..., Rerandomizable]) -> Mechanism:
        """Return the sketch these parameters define (longitudinal if asked)."""
        assert self.k is not None and self.m is not None and self.hash_seed is not None
        if self.longitudinal is None:
            assert self.epsilon is not None  # validate() checked
            return sketch(epsilon=self.epsilon, k=self.k, m=self.m, hash_seed=self.hash_seed)
        permanent = sketch(
            epsilon=self.longitudinal.epsilon_inf, k=self.k, m=self.m, hash_seed=self.hash_seed
        )
        return longitudinal.Longitudinal(
            permanent, self.longitudinal, canonical_json(self.to_fields())
        )

    @classmethod
    def plan(cls, epsilon: float, domain_size: int, devices: int) -> Plan | None:
        """Plan with k = 2048, m = 1024 (Apple's m; k past the point where collisions bite)."""
        return plan_sketch(
            cls.from_fields({"epsilon": epsilon, "k": PLAN_K, "m": PLAN_M, "hash_seed": 0}),
            domain_size,
            devices,
        )


PLAN_K, PLAN_M = 2048, 1024


def plan_sketch(params: ParamsBase, domain_size: int, devices: int) -> Plan:
    """Return a hashing mechanism's plan: noise plus the collisions of an even spread."""
    sketch = params.build()
    assert isinstance(sketch, Sketch)
    count = devices / domain_size
    noise = float(sketch.noise_variance(devices, np.array([count]))[0])
    others = (domain_size - 1) * count * max(count - 1.0, 0.0)
    collisions = others / (sketch.k * (sketch.m - 1))
    fields = {k: v for k, v in params.to_fields().items() if k != "hash_seed"}  # drawn
    return Plan(
        fields,
        float(np.sqrt(noise + collisions)),
        sketch.report_bits,
        attack_success=sketch.attack_success(domain_size),
        fake_report_worth=sketch.reach().high,
    )


def with_hash_seed(given: dict[str, Any]) -> dict[str, Any]:
    """Return task fields with a random hash seed drawn (CSPRNG) unless one is given."""
    if given.get("hash_seed") is None:
        given = {**given, "hash_seed": secrets.randbelow(MAX_SEED + 1)}
    return given


def _narrow(block: np.ndarray) -> np.ndarray:
    """Return an int64 block as int32 when every value fits: half the bytes to gather."""
    if block.size and block.min() >= -(1 << 31) and block.max() < 1 << 31:
        return block.astype(np.int32)
    return block
