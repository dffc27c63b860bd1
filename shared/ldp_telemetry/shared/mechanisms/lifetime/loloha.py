"""LOLOHA, longitudinal local hashing (Arcolezi, Pinzón, Palamidessi, Gambs, "Frequency
Estimation of Evolving Data Under Local Differential Privacy", EDBT 2023, arXiv 2210.00262),
as the ``longitudinal`` variant ``"loloha"`` of grr tasks.

Symbols: d the grr domain's size; g hashed buckets (BiLOLOHA: g = 2; OLOLOHA: the optimal g,
:func:`~ldp_telemetry.shared.mechanisms.lifetime.spec.optimal_buckets`); F = ``seeds``, the
public family of hash rows h_0 … h_{F−1}: the sketches' family
(:class:`~ldp_telemetry.shared.hashing.RowHashes`, m = g) keyed by the option's ``hash_seed``;
ε∞ the permanent layer's ε, ε₁ one report's.

- **Row.** A device's row j < F is fixed for the device and task: drawn from the HMAC-DRBG keyed
  by its task key (nothing stored). The paper draws a private hash per device; its seed, sent
  with every report, would identify the device across days. A row of a public family of F is
  shared by about n/F devices: it links a device's reports only as well as that.
- **Permanent response** per hashed bucket b = h_j(v), not per value: GRR over g at ε∞ (threshold
  T), drawn from the DRBG keyed by the device's task key, the task and b. Values hashing to one
  bucket share it, so a device draws at most g permanent responses for ever, and its lifetime ε
  is at most g·ε∞ whatever its values do.
- **Instantaneous response**, per report, fresh CSPRNG: GRR over g re-randomizing the permanent
  bucket with T_i (moves to each other bucket with T_i/2^32).

A report is OLH's (:mod:`ldp_telemetry.shared.mechanisms.olh`): (row j, bucket y), and one
report, the device's key unknown, is exactly OLH over F rows with the two layers' composed keep
probability p′; the sums are OLH's F × g table. The collector knows the family and the domain,
so the estimator solves exactly for the d counts from the F·g cells
(:mod:`ldp_telemetry.shared.mechanisms.lifetime.exact`): unbiased for the task's own family,
with no collision bias however few the rows, whenever the family tells the d values apart
(F(g − 1) + 1 ≥ d at least); otherwise OLH's estimator with its collision term answers.
ε₁ and ε∞ are computed from the published integers.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from ldp_telemetry.shared.contract import PROTOCOL_VERSION_1_1
from ldp_telemetry.shared.errors import ParameterError
from ldp_telemetry.shared.estimates import DEFAULT_LEVEL, Estimates
from ldp_telemetry.shared.mechanisms import longitudinal
from ldp_telemetry.shared.mechanisms.domain import DomainMechanism, other_value
from ldp_telemetry.shared.mechanisms.lifetime.exact import FamilySolve
from ldp_telemetry.shared.mechanisms.lifetime.spec import LocalHashingSpec
from ldp_telemetry.shared.mechanisms.longitudinal import Longitudinal
from ldp_telemetry.shared.mechanisms.olh import HashedBatch, HashedReport, OptimizedLocalHashing
from ldp_telemetry.shared.mechanisms.poisoning import Reach
from ldp_telemetry.shared.mechanisms.sketches.base import Sketch
from ldp_telemetry.shared.randomness import (
    SCALE,
    KeyedStream,
    Rng,
    check_implementable,
    log_ratio,
    threshold_at_least,
    uniform_below,
    uniform_below_many,
    uniform_word,
    uniform_words,
)
from ldp_telemetry.shared.sums import Sums, check_shape

_ROW_CONTEXT = b"ldp-telemetry hash row\x00"


class HashedChannel(OptimizedLocalHashing):
    """A row uniform below F, then GRR over g of the row's bucket: OLH with exact p and q.

    The permanent layer is this at ε∞ with T; one report is :meth:`compose_flip` of it.
    """

    name = "grr"  # the task's kind: the ledger's configuration digest names it

    def __init__(self, *, epsilon: float, k: int, g: int, hash_seed: int) -> None:
        Sketch.__init__(self, epsilon=epsilon, k=k, m=g, hash_seed=hash_seed)
        self.g = g
        self.threshold_other = threshold_at_least(1.0 / (np.exp(self.epsilon) + g - 1))
        self.threshold_keep = SCALE - (g - 1) * self.threshold_other
        check_implementable(self.threshold_keep, self.threshold_other)
        self._lie_words = (g - 1) * self.threshold_other
        self._set_channel(
            Fraction(self.threshold_keep, SCALE), Fraction(self.threshold_other, SCALE)
        )
        self.report_bits = (g - 1).bit_length() + (k - 1).bit_length()

    def _set_channel(self, keep: Fraction, other: Fraction) -> None:
        """Set P(y = own bucket), P(y = each other bucket) and what derives from them."""
        self.keep, self.other = keep, other
        ratio = keep / other
        self.effective_epsilon = log_ratio(ratio.numerator, ratio.denominator)
        self.p, self.q = float(keep), float(other)

    def __repr__(self) -> str:
        return f"HashedChannel(k={self.k}, g={self.g}, p={self.p!r}, hash_seed={self.hash_seed})"

    domain_size = 0  # the grr domain's size d (set by LocalHashingLongitudinal)

    def published(self) -> dict[str, Any]:
        """Return the uniform-prior Bayes adversary's top-1 success from one report over the
        task's d values (olh's closed form with this channel's p and g)."""
        return {"attack_success": self.attack_success(self.domain_size)}

    def output_probability(self, value: str, report: HashedReport) -> Fraction:
        """Return P(report | value) exactly, the row drawn uniformly (the device unknown)."""
        if not (0 <= report.row < self.k and 0 <= report.index < self.g):
            return Fraction(0)
        hit = self.hashes.bucket(self.key(value), report.row) == report.index
        return Fraction(1, self.k) * (self.keep if hit else self.other)

    # -- as the permanent layer of Longitudinal -------------------------------------------

    def irr_threshold(self, flip: float) -> int:
        """Return T_i moving the bucket to each other one with T_i/2^32 (flip in total)."""
        return longitudinal.flip_threshold(flip, self.g - 1, self.irr_limit())

    def irr_limit(self) -> int:
        """Return the threshold at which every bucket is equally likely (pure noise)."""
        return -(-SCALE // self.g)

    def compose_flip(self, threshold: int) -> HashedChannel:
        """Return the channel whose bucket is this one's moved to each other with T/2^32."""
        move = Fraction(threshold, SCALE)
        stay = 1 - (self.g - 1) * move
        composed = copy.copy(self)
        composed._set_channel(
            self.keep * stay + (self.g - 1) * self.other * move,
            self.keep * move + self.other * stay + (self.g - 2) * self.other * move,
        )
        return composed

    def reflip(self, report: HashedReport, threshold: int, rng: Rng = None) -> HashedReport:
        """Return the report with its bucket moved to each other one with T/2^32."""
        word = uniform_word(rng)
        if word < (self.g - 1) * threshold:
            return HashedReport(report.row, int(other_value(report.index, word, threshold)))
        return report

    def reflip_many(self, batch: HashedBatch, threshold: int, rng: Rng = None) -> HashedBatch:
        """Return each report's bucket moved to each other one with T/2^32."""
        words = uniform_words(len(batch), rng).astype(np.int64)
        moved = other_value(batch.index, words, threshold)
        return HashedBatch(
            batch.rows, np.where(words < (self.g - 1) * threshold, moved, batch.index)
        )


class LocalHashingLongitudinal(Longitudinal):
    """A grr task's LOLOHA layers: a device's row, a permanent bucket per hashed bucket."""

    protocol = PROTOCOL_VERSION_1_1  # the task's version (PROTOCOL.md §3.13): 1.0 devices refuse it

    def __init__(self, domain: DomainMechanism, spec: LocalHashingSpec, identity: str) -> None:
        permanent = HashedChannel(
            epsilon=spec.epsilon_inf, k=spec.seeds, g=spec.buckets(), hash_seed=spec.hash_seed
        )
        permanent.domain_size = domain.d
        keys = permanent.keys(list(domain.domain))
        self.family = FamilySolve(permanent.hashes, keys, permanent.g)
        super().__init__(permanent, spec, identity)
        self._row_context = _ROW_CONTEXT + identity.encode()
        self.domain = domain
        self.g = permanent.g
        self.seeds = permanent.k

    def __repr__(self) -> str:
        return f"LocalHashingLongitudinal({self.domain!r}, {self.spec.to_json()})"

    # -- the device's row and permanent responses ------------------------------------------

    def row(self) -> int:
        """Return the device's row: the same for its task key and the task, never stored."""
        key = self._bound_key()
        return int(KeyedStream(key, self._row_context).below(self.seeds, 1)[0])

    def bucket(self, value: str) -> int:
        """Return the device's hashed bucket of a value (what its permanent response is of)."""
        channel: Any = self.permanent
        return int(channel.hashes.bucket(channel.key(self._domain_value(value)), self.row()))

    def permanent_bytes(self, value: Any) -> bytes:
        """Return what the value's permanent response is drawn for: its bucket, 4 bytes."""
        return self.bucket(value).to_bytes(4, "big")

    def drawn_for(self, canonical: bytes) -> bytes:
        """Return the bucket (4 bytes) of the value whose canonical bytes (its grr index)
        are given: the device's ledger charges ε∞ once per bucket, at most g times."""
        return self.permanent_bytes(self.domain.domain[int.from_bytes(canonical, "big")])

    def permanent_response(self, value: Any) -> HashedReport:
        """Return the device's permanent response for the value's bucket (the same every
        time, and the same for every value hashing to that bucket)."""
        key = self._bound_key()
        stream = KeyedStream(key, self._identity + self.permanent_bytes(value))
        return HashedReport(self.row(), self._grr_of(self.bucket(value), uniform_word(stream)))

    def _grr_of(self, bucket: int, word: int) -> int:
        channel: Any = self.permanent
        if word < (self.g - 1) * channel.threshold_other:
            return int(other_value(bucket, word, channel.threshold_other))
        return bucket

    def _bound_key(self) -> bytes:
        if self._device_key is None:
            raise ParameterError(
                "the permanent response belongs to a device: call for_device(key) first"
            )
        return self._device_key

    def _domain_value(self, value: Any) -> str:
        return self.domain.domain[self.domain.index_of(value)]

    # -- reports ---------------------------------------------------------------------------

    def privatize(self, value: Any, rng: Rng = None) -> HashedReport:
        """Return one report: the permanent response re-randomized with fresh noise.

        Unbound (simulations, tests): a new device's row and permanent response from ``rng``.
        """
        if self._device_key is not None:
            permanent = self.permanent_response(value)
        else:
            channel: Any = self.permanent
            row = uniform_below(self.seeds, rng)
            bucket = int(channel.hashes.bucket(channel.key(self._domain_value(value)), row))
            permanent = HashedReport(row, self._grr_of(bucket, uniform_word(rng)))
        return self.permanent.reflip(permanent, self.threshold, rng)

    def privatize_many(self, values: Any, rng: Rng = None) -> HashedBatch:
        """Return first reports of many new devices (rows and permanent responses drawn)."""
        return self.reports_of(values, uniform_below_many(self.seeds, len(values), rng), rng)

    def reports_of(
        self, values: Sequence[str], rows: np.ndarray, rng: Rng = None, permanent_words: Any = None
    ) -> HashedBatch:
        """Return reports of devices in ``rows`` holding ``values``.

        ``permanent_words``: each device's permanent word for its bucket (simulations of
        devices over time keep them); None draws them afresh.
        """
        channel: Any = self.permanent
        keys = channel.keys([self._domain_value(v) for v in values])
        buckets = channel.hashes.buckets(keys, np.asarray(rows, dtype=np.int64))
        words = permanent_words
        if words is None:
            words = uniform_words(len(keys), rng)
        words = np.asarray(words, dtype=np.int64)
        lies = other_value(buckets, words, channel.threshold_other)
        prr = np.where(words < (self.g - 1) * channel.threshold_other, lies, buckets)
        batch = HashedBatch(np.asarray(rows, dtype=np.int64), prr.astype(np.int64))
        return self.permanent.reflip_many(batch, self.threshold, rng)

    # -- the domain is grr's ---------------------------------------------------------------

    def canonical(self, value: Any) -> bytes:
        """Return the value's canonical bytes: its grr index, 4 bytes big-endian."""
        return self.domain.canonical(value)

    def parse_candidates(self, raw: Any) -> list[Any] | None:
        """Return the candidates a query names (None: the whole domain)."""
        return self.domain.parse_candidates(raw)

    def estimate(
        self, sums: Sums, candidates: Sequence[Any] | None = None, level: float = DEFAULT_LEVEL
    ) -> Estimates:
        """Estimate the counts of the candidates (default: every domain value): the exact
        solve over the family when it tells the values apart, OLH's estimator otherwise."""
        chosen = list(self.domain.domain) if candidates is None else list(candidates)
        index = np.array([self.domain.index_of(value) for value in chosen], dtype=np.int64)
        if not self.family.exact:
            return self.instant.estimate(sums, chosen, level)
        channel: Any = self.instant
        check_shape(sums, self.seeds, self.g, repr(self))
        read, done = channel.row_totals.reader(sums)  # the sums checks reuse the total
        gathered = self.family.gather(read)
        done()
        n = int(sums.total)
        counts = self.family.solve(gathered, n, channel.p, channel.q)
        variance = self.family.variance(np.clip(counts, 0, n), n, index, channel.p, channel.q)
        return Estimates.from_variance(chosen, counts[index], variance, n, level)

    def over_buckets(self, estimates: Estimates, buckets: int) -> Estimates:
        """Return estimates over ``buckets`` time buckets (Longitudinal.over_buckets), with the
        permanent layer's exact variance when the exact estimator answers.

        That variance needs every value's count: the candidates' estimates (clipped), and the
        reports left spread evenly over the values not asked about.
        """
        if buckets <= 1 or not self.family.exact:
            return super().over_buckets(estimates, buckets)
        n = estimates.n
        index = np.array([self.domain.index_of(v) for v in estimates.values], dtype=np.int64)
        counts = np.zeros(self.domain.d)
        counts[index] = np.clip(np.asarray(estimates.estimate, dtype=float), 0, n)
        rest = np.setdiff1d(np.arange(self.domain.d), index)
        if len(rest):
            counts[rest] = max(0.0, n - counts[index].sum()) / len(rest)
        channel: Any = self.permanent
        shared = self.family.variance(counts, n, index, channel.p, channel.q)
        variance = estimates.std_error**2 + (buckets - 1) * shared
        return Estimates.from_variance(
            list(estimates.values), estimates.estimate, variance, n, estimates.level
        )

    def reach(self) -> Any:
        """Return how far one report moves a count (the exact estimator's, when it answers)."""
        if not self.family.exact:
            return super().reach()
        channel: Any = self.instant
        return Reach(*self.family.reach(channel.p, channel.q))
