"""What every mechanism provides, and the helpers its parameter object is built from.

A mechanism kind is one module in this package: a frozen parameter object (validation, defaults,
JSON form, the options its CLI and OpenAPI schema show) whose ``build()`` gives the
:class:`Mechanism`: privatize on the device, the payload's wire form, the exact
``output_probability`` the privacy tests enumerate, an integer accumulator that merges by addition,
the candidate policy and the estimator. :mod:`ldp_telemetry.shared.mechanisms.registry` maps a name
to its parameter class; nothing outside this package names a mechanism.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

import numpy as np

from ldp_telemetry.shared.errors import ParameterError
from ldp_telemetry.shared.estimates import Estimates
from ldp_telemetry.shared.mechanisms.poisoning import Check, Reach
from ldp_telemetry.shared.randomness import Rng
from ldp_telemetry.shared.sums import RowSums, Sums

Batch = Any  # a mechanism's stacked reports: a numpy array or a dataclass of arrays


@dataclass(frozen=True)
class Option:
    """One task parameter as the CLI and the OpenAPI schema present it.

    ``kind`` is ``number``, ``integer``, ``strings`` (a list of strings; comma-separated
    on the command line) or ``object`` (a JSON object; JSON on the command line too).
    """

    name: str
    kind: str
    help: str


class Mechanism(Protocol):
    """A built mechanism: what the client, the codec and the collector call.

    Optional features are declared below it (:class:`Discovering`, :class:`Publishing`) and, for the
    permanent layer, by :class:`ldp_telemetry.shared.mechanisms.longitudinal.Longitudinal`; code
    outside this package asks :mod:`ldp_telemetry.shared.mechanisms.features` whether a mechanism
    has one, never ``isinstance`` / ``hasattr``.
    """

    @property
    def name(self) -> str:
        """Return the registry name."""
        ...

    @property
    def epsilon(self) -> float:
        """Return the epsilon asked for."""
        ...

    @property
    def effective_epsilon(self) -> float:
        """Return the epsilon implemented (never above the one asked for)."""
        ...

    @property
    def payload_fields(self) -> tuple[str, ...]:
        """Return the report's JSON fields besides report_id, fingerprint and time."""
        ...

    @property
    def sums_shape(self) -> tuple[int, int]:
        """Return (rows, width) of the accumulator's table."""
        ...

    def privatize(self, value: Any, rng: Rng = None) -> Any:
        """Return the privatized report of one value."""
        ...

    def privatize_many(self, values: Any, rng: Rng = None) -> Batch:
        """Return privatized reports of many values as a batch."""
        ...

    def derived(self) -> dict[str, Any]:
        """Return every integer a device derives from the parameters (thresholds, g, …).

        The task JSON publishes them (``derived``, fingerprinted) so that no device computes
        them with its own libm; a device checks them against its own computation.
        """
        ...

    def for_device(self, device_key: bytes) -> Mechanism:
        """Return the mechanism as one device uses it (``device_key``: secret to the device).

        Stateless mechanisms return themselves; one whose reports depend on the device
        (a fixed level, a permanent response) derives that from the key.
        """
        ...

    def canonical(self, value: Any) -> bytes:
        """Return the bytes that identify a valid value (raise ValueOutOfDomain otherwise)."""
        ...

    def output_probability(self, value: Any, report: Any) -> Fraction:
        """Return P(report | value) exactly (0 for a report this mechanism never sends)."""
        ...

    def encode_payload(self, report: Any) -> dict[str, Any]:
        """Return the report's payload fields as JSON values."""
        ...

    def decode_payload(self, obj: Mapping[str, Any]) -> Any:
        """Return the report a JSON object's payload fields hold, or raise DecodeError."""
        ...

    def stack(self, reports: Sequence[Any]) -> Batch:
        """Return decoded reports as the batch ``new_sums().add_many`` takes."""
        ...

    def new_sums(self) -> Sums:
        """Return an empty accumulator."""
        ...

    def fold(self, batch: Batch) -> RowSums:
        """Return the sums of a batch over only the table rows it touches."""
        ...

    def split_rows(self, batch: Batch, rows_per_part: int) -> Iterator[Batch]:
        """Yield the batch in parts whose reports fall in one block of rows each."""
        ...

    def parse_candidates(self, raw: Any) -> list[Any] | None:
        """Return the candidates a query names (None: the default), or raise ParameterError."""
        ...

    def estimate(
        self, sums: Any, candidates: Sequence[Any] | None = None, level: float = ...
    ) -> Estimates:
        """Estimate each candidate's count with standard errors and intervals."""
        ...

    def reach(self) -> Reach | None:
        """Return how far one report can move one candidate's count (None: no counts)."""
        ...

    def check_sums(self, sums: Any) -> list[Check]:
        """Return the tests of sums against honest devices that this mechanism supports."""
        ...


@runtime_checkable
class Discovering(Protocol):
    """Optional: find the most frequent values without a candidate list (heavy hitters)."""

    def discover(self, sums: Any, top: int = ..., survivors: int = ..., level: float = ...) -> Any:
        """Return the ``top`` values found (an ``hh.search.Discovery``)."""
        ...


@runtime_checkable
class Publishing(Protocol):
    """Optional: integers a device uses, published in the task JSON beside its fields."""

    def published(self) -> dict[str, Any]:
        """Return the fields the task JSON adds (fingerprinted with it)."""
        ...


@runtime_checkable
class StatesVariationRatio(Protocol):
    """Optional: the output probabilities shuffle amplification's tighter bound needs."""

    def variation_ratio(self) -> Any:
        """Return a ``shuffling.amplification.VariationRatio`` (typed there: it imports this)."""
        ...


@dataclass(frozen=True)
class Plan:
    """What a mechanism would give for a workload: its parameters and a count's error.

    ``std_error`` is the closed-form standard error of one value's count when ``devices``
    reports are spread evenly over ``domain_size`` values (hash collisions included for
    the hashing mechanisms); ``report_bits`` is the payload's size on the wire;
    ``attack_success`` the chance that a Bayes adversary with a uniform prior over the
    ``domain_size`` values guesses a device's value from one report (None: not derived).
    ``fake_report_worth`` how many honest devices' counts one fake report can add to a
    value (:meth:`Mechanism.reach`: what poisoning costs).
    """

    fields: dict[str, Any]
    std_error: float
    report_bits: int
    attack_success: float | None = None
    fake_report_worth: float | None = None


class JsonObject:
    """A parameter whose JSON form is an object (e.g. the ``longitudinal`` option)."""

    def to_json(self) -> dict[str, Any]:
        """Return the JSON object (what the task's JSON and fingerprint hold)."""
        raise NotImplementedError


P = TypeVar("P", bound="ParamsBase")


class ParamsBase:
    """Shared behaviour of the frozen parameter dataclasses (one per mechanism kind).

    A subclass is a frozen dataclass whose fields are its parameters (None: not given)
    and defines ``name``, ``options``, :meth:`validate` and :meth:`build`.
    """

    name: ClassVar[str]
    options: ClassVar[tuple[Option, ...]]
    # Fields that only this kind takes, and the error another kind gives for them.
    exclusive: ClassVar[tuple[frozenset[str], str] | None] = None

    @classmethod
    def fields(cls) -> tuple[str, ...]:
        """Return the names of the parameters this kind takes."""
        return tuple(option.name for option in cls.options)

    @classmethod
    def from_fields(cls: type[P], given: Mapping[str, Any]) -> P:
        """Return validated parameters from JSON-like fields (numbers normalised)."""
        params = cls(**{name: _plain(given.get(name)) for name in cls.fields()})
        params.validate()
        return params

    @classmethod
    def defaults_for_new_task(cls, given: dict[str, Any]) -> dict[str, Any]:
        """Return the fields with what a new task draws filled in (e.g. a hash seed)."""
        return given

    def validate(self) -> None:
        """Raise ParameterError naming the fix if the parameters are unusable."""
        raise NotImplementedError

    @classmethod
    def plan(cls, epsilon: float, domain_size: int, devices: int) -> Plan | None:
        """Return this kind's parameters and expected error for a workload (None: unfit)."""
        return None

    def build(self) -> Mechanism:
        """Return the mechanism these parameters define."""
        raise NotImplementedError

    def to_fields(self) -> dict[str, Any]:
        """Return the parameters that are set, as JSON values (tuples as lists)."""
        out: dict[str, Any] = {}
        for name in self.fields():
            value = getattr(self, name)
            if isinstance(value, JsonObject):
                out[name] = value.to_json()
            elif value is not None:
                out[name] = list(value) if isinstance(value, tuple) else value
        return out

    def require(self, *names: str) -> None:
        """Raise ParameterError '<kind> needs a, b' for the named fields left out."""
        missing = [name for name in names if getattr(self, name) is None]
        if missing:
            raise ParameterError(f"{self.name} needs {', '.join(missing)}")


def _plain(value: Any) -> Any:
    """Return plain int/float for numpy scalars (JSON and fingerprints need them).

    Bools and non-numbers are left for the checks to refuse; integers stay integers so
    that an integral k is accepted, and floats stay floats.
    """
    if isinstance(value, bool | np.bool_):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    return value


def as_float(value: Any) -> Any:
    """Return a real number as float (4 must fingerprint as 4.0); anything else unchanged."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_):
        return float(value)
    return value


def check_candidate_strings(raw: Any) -> list[str]:
    """Return ``raw`` if it is a non-empty list of strings, else raise ParameterError."""
    if not isinstance(raw, list) or not raw or not all(isinstance(c, str) for c in raw):
        raise ParameterError("candidates must be a non-empty list of strings")
    return list(raw)


class SingleRowMechanism:
    """Defaults of a mechanism that ignores the device and keeps one table row."""

    def reach(self) -> Reach | None:
        """Return None: a mechanism that estimates counts says how far a report moves one."""
        return None

    def check_sums(self, sums: Any) -> list[Check]:
        """Return no tests: one row of free counts has no honest shape to test."""
        return []

    def for_device(self, device_key: bytes) -> Any:
        """Return self: every device privatizes alike."""
        return self

    def new_sums(self) -> Sums:
        """Return an empty accumulator (each mechanism defines it)."""
        raise NotImplementedError

    def fold(self, batch: Batch) -> RowSums:
        """Return the batch summed into row 0."""
        sums = self.new_sums()
        sums.add_many(batch)
        return RowSums(np.zeros(1, dtype=np.int64), sums.n, sums.table)

    def split_rows(self, batch: Batch, rows_per_part: int) -> Iterator[Batch]:
        """Yield the whole batch: it touches one row."""
        yield batch
