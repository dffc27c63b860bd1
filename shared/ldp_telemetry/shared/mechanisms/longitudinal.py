"""Privacy over repeated reports: a permanent response per value, re-randomized per report.

RAPPOR's two layers (Erlingsson et al., CCS 2014) for rr, grr, cms and hcms. A task with
``longitudinal: {"epsilon_inf": ε∞, "flip": f}`` (or ``"epsilon_1": ε₁`` instead of f):

- the **permanent response** (PRR) of a value is the mechanism's own report at ε∞ — the
  whole report, a sketch's row included — drawn from an HMAC-DRBG keyed by the device's task key,
  the task's parameters and the value (:class:`ldp_telemetry.shared.randomness.KeyedStream`). It is
  the same every time and nothing is stored, so a stolen disk holds no value, and however many
  reports a device sends about a value, they reveal at most ε∞ about it;
- the **instantaneous response** (IRR) re-randomizes the PRR with fresh CSPRNG noise for
  each report: each noisy bit (rr, hcms: the one bit; cms: each of the m bits) flips
  with probability f, or (grr) the index becomes each other value with probability
  f/(d−1). One report therefore reveals at most ε₁ < ε∞.

Both layers are exact 32-bit thresholds; ε∞ and ε₁ are computed from them, and one report
is distributed exactly as the mechanism with the two channels composed (for bits,
f_eff = f_prr·(1−f) + (1−f_prr)·f), whose estimator and closed-form variance answer.
"""

from __future__ import annotations

import copy
import hashlib
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol, TypeVar

from ldp_telemetry.shared.errors import ParameterError
from ldp_telemetry.shared.estimates import DEFAULT_LEVEL, Estimates
from ldp_telemetry.shared.mechanisms import poisoning
from ldp_telemetry.shared.mechanisms.base import Batch, JsonObject, Mechanism, Option
from ldp_telemetry.shared.randomness import SCALE, KeyedStream, Rng, threshold_at_least
from ldp_telemetry.shared.sums import RowSums, Sums
from ldp_telemetry.shared.validation import check_epsilon

LONGITUDINAL_OPTION = Option(
    "longitudinal",
    "object",
    'rr, grr, cms, hcms: {"epsilon_inf": E, "flip": F} or {"epsilon_inf": E, "epsilon_1": E1}: '
    "a permanent response per value (at most E about it, for ever) re-randomized per report "
    "(F: the instantaneous flip probability; E1: the epsilon one report may spend). "
    'grr also: {"variant": "loloha", "epsilon_inf": E, "epsilon_1": E1, "g": 2 or "optimal", '
    '"seeds": F}: a permanent response per hashed bucket (at most g*E for ever, whatever the '
    "values). Leave epsilon out.",
)
_KEYS = frozenset({"epsilon_inf", "epsilon_1", "flip"})
_CONTEXT = b"ldp-telemetry permanent response\x00"

M = TypeVar("M", bound="Rerandomizable")


class Rerandomizable(Mechanism, Protocol):
    """What a mechanism provides besides :class:`Mechanism` to be a permanent layer."""

    def irr_threshold(self, flip: float) -> int:
        """Return the instantaneous layer's 32-bit threshold for a flip probability (rounded
        up: never less private than asked), or raise ParameterError if out of range."""
        ...

    def irr_limit(self) -> int:
        """Return the smallest threshold at which a report no longer depends on the value."""
        ...

    def compose_flip(self: M, threshold: int) -> M:
        """Return the mechanism one report follows: this one's report re-randomized with
        ``threshold`` (its exact output probabilities, epsilon and estimator)."""
        ...

    def reflip(self, report: Any, threshold: int, rng: Rng = None) -> Any:
        """Return one report re-randomized with ``threshold``."""
        ...

    def answer_variance(self, estimates: Estimates) -> Any:
        """Return the closed-form noise variance of each answered count at its estimate."""
        ...

    def reflip_many(self, batch: Batch, threshold: int, rng: Rng = None) -> Batch:
        """Return a batch of reports, each re-randomized with ``threshold``."""
        ...


class LayerSpec(Protocol):
    """What :class:`Longitudinal` reads of its option (RAPPOR's, or a variant's)."""

    @property
    def epsilon_inf(self) -> float: ...

    @property
    def epsilon_1(self) -> float | None: ...

    @property
    def flip(self) -> float | None: ...

    def to_json(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class LongitudinalSpec(JsonObject):
    """The ``longitudinal`` option as given: ε∞ and either ε₁ or the flip probability."""

    epsilon_inf: float
    epsilon_1: float | None = None
    flip: float | None = None

    @classmethod
    def parse(cls, raw: object) -> LongitudinalSpec:
        """Return the option a JSON object gives, or raise ParameterError naming the fix."""
        if isinstance(raw, LongitudinalSpec):
            return raw
        if not isinstance(raw, Mapping):
            raise ParameterError(
                'longitudinal must be an object {"epsilon_inf": E, "flip": F} or '
                '{"epsilon_inf": E, "epsilon_1": E1}'
            )
        if "variant" in raw:
            raise ParameterError(
                "longitudinal variant 'loloha' is for grr tasks (a domain to hash); "
                "leave variant out for RAPPOR's layers"
            )
        unknown = set(raw) - _KEYS
        if unknown:
            raise ParameterError(
                f"longitudinal takes epsilon_inf and epsilon_1 or flip, not {sorted(unknown)}"
            )
        if "epsilon_inf" not in raw or ("epsilon_1" in raw) == ("flip" in raw):
            raise ParameterError(
                "longitudinal needs epsilon_inf and exactly one of epsilon_1, flip"
            )
        epsilon_inf = check_epsilon(_number(raw["epsilon_inf"], "epsilon_inf"))
        if "flip" in raw:
            flip = _number(raw["flip"], "flip")
            if not 0.0 < flip < 1.0:
                raise ParameterError(f"longitudinal flip must be in (0, 1), got {flip}")
            return cls(epsilon_inf, flip=flip)
        epsilon_1 = check_epsilon(_number(raw["epsilon_1"], "epsilon_1"))
        if epsilon_1 >= epsilon_inf:
            raise ParameterError(
                f"longitudinal epsilon_1 ({epsilon_1}) must be below epsilon_inf ({epsilon_inf}): "
                "one report spends less than the permanent response protects"
            )
        return cls(epsilon_inf, epsilon_1=epsilon_1)

    def to_json(self) -> dict[str, Any]:
        """Return the fields that are set (what the task's JSON and fingerprint hold)."""
        out: dict[str, Any] = {"epsilon_inf": self.epsilon_inf}
        if self.epsilon_1 is not None:
            out["epsilon_1"] = self.epsilon_1
        if self.flip is not None:
            out["flip"] = self.flip
        return out


def _number(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ParameterError(f"longitudinal {name} must be a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise ParameterError(f"longitudinal {name} must be finite")
    return float(value)


def flip_threshold(flip: float, ways: int, limit: int) -> int:
    """Return the threshold T with ``ways``·T/2^32 >= flip (rounded up: more noise).

    ``ways``: how many outcomes the flip spreads over (grr: the d−1 other values). A
    threshold of ``limit`` or more would make reports independent of the value: refused.
    """
    threshold = threshold_at_least(flip / ways) if flip > 0 else 0
    if not 0 < threshold < limit:
        raise ParameterError(
            f"longitudinal flip must be above 0 and below {ways * limit / SCALE:g}, got {flip}"
        )
    return threshold


def flipped(p_one: Fraction, flip: Fraction) -> Fraction:
    """Return P(bit = 1) after a bit that is 1 with ``p_one`` flips with ``flip``."""
    return p_one * (1 - flip) + (1 - p_one) * flip


def check_epsilon_left_out(epsilon: object, spec: object) -> LongitudinalSpec | None:
    """Return the parsed option (None if not given); refuse epsilon beside it."""
    if spec is None:
        return None
    parsed = LongitudinalSpec.parse(spec)
    refuse_epsilon_beside(epsilon)
    return parsed


def refuse_epsilon_beside(epsilon: object) -> None:
    """Refuse epsilon beside a longitudinal option (which says what each report spends)."""
    if epsilon is not None:
        raise ParameterError(
            "a longitudinal task takes its privacy from longitudinal (epsilon_inf, and "
            "epsilon_1 or flip): leave epsilon out"
        )


class Longitudinal:
    """A mechanism whose reports are its permanent responses, re-randomized per report.

    ``permanent`` is the mechanism at ε∞; ``instant`` is what one report follows (the two layers
    composed), so the wire format, sums and estimator are the mechanism's own. ``epsilon`` and
    ``effective_epsilon`` are ε₁ (asked, implemented); ``epsilon_inf`` and ``effective_epsilon_inf``
    the permanent layer's; ``configuration`` identifies what the permanent responses are derived
    from (a device's ledger, ``ldp_telemetry.client.privacy_ledger``, keeps it).
    """

    def __init__(self, permanent: Rerandomizable, spec: LayerSpec, identity: str) -> None:
        self.permanent, self.spec = permanent, spec
        self.name = permanent.name
        self.epsilon_inf = spec.epsilon_inf
        self.effective_epsilon_inf = permanent.effective_epsilon
        if spec.flip is not None:
            self.threshold = permanent.irr_threshold(spec.flip)
        else:
            assert spec.epsilon_1 is not None
            self.threshold = _threshold_for(permanent, spec.epsilon_1)
        self.instant = permanent.compose_flip(self.threshold)
        self.flip = Fraction(self.threshold, SCALE)
        self.effective_epsilon = self.instant.effective_epsilon
        self.epsilon = spec.epsilon_1 if spec.epsilon_1 is not None else self.effective_epsilon
        # What the permanent responses are bound to besides the device's task key.
        self._identity = _CONTEXT + identity.encode() + b"\x00"
        # The permanent layer's configuration as a device's privacy ledger records it: a
        # digest of the mechanism and every field the permanent responses depend on
        # (PROTOCOL.md §4). The name too: cms and hcms with equal fields share a seed.
        digest = hashlib.sha256(f"{permanent.name}\x00{identity}".encode())
        self.configuration = digest.hexdigest()[:32]
        self._device_key: bytes | None = None

    def __repr__(self) -> str:
        return f"Longitudinal({self.permanent!r}, {self.spec.to_json()})"

    def derived(self) -> dict[str, Any]:
        """Return the permanent layer's integers (at ε∞) and the instantaneous T_i."""
        return {**self.permanent.derived(), "T_i": self.threshold}

    def for_device(self, device_key: bytes) -> Longitudinal:
        """Return the mechanism bound to a device's task key (its permanent responses)."""
        if not isinstance(device_key, bytes | bytearray) or len(device_key) < 16:
            raise ParameterError(
                "a longitudinal task needs the device's key: at least 16 bytes of HMAC output"
            )
        bound = copy.copy(self)
        bound._device_key = bytes(device_key)
        return bound

    def drawn_for(self, canonical: bytes) -> bytes:
        """Return what the permanent response of a value, given by its canonical bytes, is
        drawn for: those bytes (one PRR per value; LOLOHA: per hashed bucket)."""
        return canonical

    def permanent_response(self, value: Any) -> Any:
        """Return the device's permanent response for a value (the same every time)."""
        if self._device_key is None:
            raise ParameterError(
                "the permanent response belongs to a device: call for_device(key) first"
            )
        stream = KeyedStream(self._device_key, self._identity + self.permanent.canonical(value))
        return self.permanent.privatize(value, stream)

    def privatize(self, value: Any, rng: Rng = None) -> Any:
        """Return one report: the permanent response re-randomized with fresh noise.

        A device-bound mechanism derives the permanent response from its key; an unbound
        one (simulations, tests) draws it from ``rng`` as a new device would.
        """
        if self._device_key is None:
            permanent = self.permanent.privatize(value, rng)
        else:
            permanent = self.permanent_response(value)
        return self.permanent.reflip(permanent, self.threshold, rng)

    def privatize_many(self, values: Any, rng: Rng = None) -> Batch:
        """Return first reports of many devices: fresh permanent responses, re-randomized."""
        batch = self.permanent.privatize_many(values, rng)
        return self.permanent.reflip_many(batch, self.threshold, rng)

    def output_probability(self, value: Any, report: Any) -> Fraction:
        """Return P(report | value) of one report, the device's secret unknown (exact)."""
        return self.instant.output_probability(value, report)

    def estimate(
        self, sums: Sums, candidates: Sequence[Any] | None = None, level: float = DEFAULT_LEVEL
    ) -> Estimates:
        """Estimate counts with the composed channel's estimator and closed-form variance."""
        return self.instant.estimate(sums, candidates, level)

    def reach(self) -> Any:
        """Return how far one report moves a count (the composed channel's estimator)."""
        return self.instant.reach()

    def check_sums(self, sums: Any, buckets: int = 1) -> Any:
        """Return the composed channel's tests of the sums of ``buckets`` time buckets.

        Over several buckets a device's reports about a value share its permanent
        response (its row, its bits): the tests allow for it (``poisoning.repeated``), as
        :meth:`over_buckets` does for the intervals. A report's weight given the permanent
        response is m·t + (1 − 2t)·W_PRR, so two reports sharing one covary by
        (1 − 2t)²·Var(W_PRR).
        """
        checks = self.instant.check_sums(sums)
        band = getattr(self.permanent, "band", None)  # bit-weight bands: cms
        composed = getattr(self.instant, "band", None)
        share = 0.0
        if band is not None and composed is not None:
            t = float(self.flip)
            share = (1.0 - 2.0 * t) ** 2 * band.variance / composed.variance
        return [poisoning.repeated(check, buckets, share) for check in checks]

    def over_buckets(self, estimates: Estimates, buckets: int) -> Estimates:
        """Return estimates over ``buckets`` time buckets with honest intervals.

        Within a bucket each device sends at most one report per value, and devices are
        independent. Across buckets a device's reports about one value share its permanent
        response: the instantaneous noise is fresh per report, the permanent noise is not.
        Two such reports X, X' have Cov(X, X') = Var(E[X | PRR]), the variance of the
        permanent layer's own estimator (the composed estimator averages the instantaneous
        flip out: E[f̂_composed | PRR] = f̂_permanent), and reports about different values
        are independent (their permanent responses are drawn apart). Each report has at
        most B − 1 partners, so Var(Σ_b f̂_b) ≤ Var_composed + (B − 1)·Var_permanent, both
        the closed forms at the counts summed over buckets: an upper bound whatever the
        devices report, reached when every device reports the same value in every bucket.
        It is never wider than √B times the one-bucket SE, which ignores that the
        instantaneous noise is independent.
        """
        if buckets <= 1:
            return estimates
        shared = self.permanent.answer_variance(estimates)
        variance = estimates.std_error**2 + (buckets - 1) * shared
        return Estimates.from_variance(
            list(estimates.values), estimates.estimate, variance, estimates.n, estimates.level
        )

    # -- the rest is the mechanism's own: wire format, sums, candidates --------------------

    @property
    def payload_fields(self) -> tuple[str, ...]:
        """Return the report's JSON fields (the mechanism's)."""
        return self.permanent.payload_fields

    @property
    def sums_shape(self) -> tuple[int, int]:
        """Return the accumulator's (rows, width) (the mechanism's)."""
        return self.permanent.sums_shape

    def canonical(self, value: Any) -> bytes:
        """Return the bytes that identify a valid value (ValueOutOfDomain otherwise)."""
        return self.permanent.canonical(value)

    def encode_payload(self, report: Any) -> dict[str, Any]:
        """Return the report's payload fields as JSON values."""
        return self.permanent.encode_payload(report)

    def decode_payload(self, obj: Mapping[str, Any]) -> Any:
        """Return the report a JSON object's payload fields hold, or raise DecodeError."""
        # The composed channel: its plausibility checks know both layers' noise.
        return self.instant.decode_payload(obj)

    def stack(self, reports: Sequence[Any]) -> Batch:
        """Return decoded reports as a batch."""
        return self.permanent.stack(reports)

    def new_sums(self) -> Sums:
        """Return an empty accumulator."""
        return self.permanent.new_sums()

    def fold(self, batch: Batch) -> RowSums:
        """Return the sums of a batch over the rows it touches."""
        return self.permanent.fold(batch)

    def split_rows(self, batch: Batch, rows_per_part: int) -> Iterator[Batch]:
        """Yield the batch in parts whose reports fall in one block of rows each."""
        return self.permanent.split_rows(batch, rows_per_part)

    def parse_candidates(self, raw: Any) -> list[Any] | None:
        """Return the candidates a query names (None: the default)."""
        return self.permanent.parse_candidates(raw)


def _threshold_for(permanent: Rerandomizable, epsilon_1: float) -> int:
    """Return the smallest instantaneous threshold whose report spends at most ε₁.

    ε₁ falls as the threshold grows (more noise), so a binary search over the 32-bit
    thresholds finds it; every candidate's ε is computed exactly as the task publishes it.
    """
    low, high = 0, permanent.irr_limit()  # ε(low) > ε₁ ≥ ε(high) = 0
    while high - low > 1:
        middle = (low + high) // 2
        if permanent.compose_flip(middle).effective_epsilon <= epsilon_1:
            high = middle
        else:
            low = middle
    if high >= permanent.irr_limit():
        raise ParameterError(f"longitudinal epsilon_1 {epsilon_1} is too small to implement")
    return high
