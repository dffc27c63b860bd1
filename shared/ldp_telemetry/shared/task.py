"""A task: the immutable, public parameter set that clients privatize with.

A task names its mechanism (one of :data:`MECHANISMS`, see :mod:`ldp_telemetry.shared.mechanisms`)
and holds that mechanism's parameter object, the width of its time buckets and the smallest number
of reports an estimate may be released for. Its fingerprint hashes all of them, so a report made
under other parameters is recognised and refused; changing anything means a new task. On the wire
(and in the fingerprint) a task is one flat JSON object: the common fields beside the mechanism's
own, the protocol version and ``derived``, every integer a device derives from the parameters
(PROTOCOL.md §1). The fingerprint is the SHA-256 of the object's RFC 8785 canonical form, so any
language reproduces it.
"""

from __future__ import annotations

import hashlib
import numbers
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ldp_telemetry.shared.contract import PROTOCOL_VERSION, PROTOCOL_VERSION_1_1
from ldp_telemetry.shared.dimensions import (
    MAX_MIN_SLICE_SIZE,
    Dimensions,
    default_min_slice_size,
)
from ldp_telemetry.shared.errors import ParameterError
from ldp_telemetry.shared.mechanisms import auto
from ldp_telemetry.shared.mechanisms.base import Mechanism, ParamsBase
from ldp_telemetry.shared.mechanisms.features import longitudinal, protocol_of, published
from ldp_telemetry.shared.mechanisms.registry import KINDS, check_foreign_fields, params_class
from ldp_telemetry.shared.sealing import SealKey
from ldp_telemetry.shared.validation import check_int
from ldp_telemetry.shared.wire import canonical_json

DAY = 86_400
TASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
_COMMON = ("task_id", "mechanism", "time_precision", "min_batch_size", "sealed", "fingerprint")
# Protocol 1.1: public dimensions (ldp_telemetry.shared.dimensions), fingerprinted when declared.
_DIMENSIONS = ("dimensions", "min_slice_size")
# Every mechanism's parameter names: read as task attributes (None where not taken).
PARAMETER_NAMES = frozenset(name for kind in KINDS.values() for name in kind.fields())
TASK_FIELDS = frozenset(_COMMON + _DIMENSIONS) | PARAMETER_NAMES  # every field of a task's JSON
# Computed from the parameters, so not fingerprinted; a mechanism may publish more through
# ``published()`` (the attack success of one report). ``selection`` records how a task
# created with ``mechanism: "auto"`` was chosen.
PUBLISHED = ("effective_epsilon", "effective_epsilon_inf", "attack_success", "selection")
# The collector's policy for a task: served beside it, not fingerprinted (a device needs
# them to upload, not to privatize). ``seal``: the collector's current HPKE public key for
# a sealed task (ldp_telemetry.shared.sealing), served so that keys rotate without a new task.
SERVED = ("upload_key_required", "archive", "seal")
CHECKED = ("protocol", "derived")  # fingerprinted; a device checks them against its own
# The versions whose tasks this code privatizes: a 1.1 task uses what 1.0 lacks (LOLOHA), and
# one of another 1.x is refused. A task's version is the lowest its fields need (protocol_of).
SPOKEN_PROTOCOLS = (PROTOCOL_VERSION, PROTOCOL_VERSION_1_1)


class DerivedMismatch(ParameterError):
    """A task's published derived integers are not the ones its parameters give."""


@dataclass(frozen=True, init=False)
class TaskConfig:
    """A validated task; build one with :meth:`create` or :meth:`from_dict`.

    ``TaskConfig(task_id=..., mechanism="cms", epsilon=4, k=..., m=..., hash_seed=...)``
    takes the mechanism's parameters as keywords (or a ready ``params`` object, which the
    keywords override); ``task.params`` holds them, and ``task.k`` reads one (None when
    the mechanism takes no such parameter). ``dimensions`` (a list as in the task's JSON, or
    :class:`~ldp_telemetry.shared.dimensions.Dimensions`) declares public dimensions; then
    ``min_slice_size`` (default max(50, min_batch_size)) is the fewest reports a slice is
    answered alone for, and the task speaks protocol 1.1.
    """

    task_id: str
    mechanism: str
    params: ParamsBase
    time_precision: int = DAY
    min_batch_size: int = 100
    sealed: bool = False
    dimensions: Dimensions | None = None
    min_slice_size: int | None = None  # set iff dimensions are
    fingerprint: str = field(default="", compare=False)
    selection: dict[str, Any] | None = field(default=None, compare=False)
    seal: SealKey | None = field(default=None, compare=False)

    def __init__(
        self,
        task_id: str,
        mechanism: str,
        params: ParamsBase | None = None,
        time_precision: int = DAY,
        min_batch_size: int = 100,
        sealed: bool = False,
        dimensions: Any = None,
        min_slice_size: Any = None,
        fingerprint: str = "",
        selection: dict[str, Any] | None = None,
        seal: SealKey | None = None,
        **parameters: Any,
    ) -> None:
        # fullmatch: with match, "$" also matches before a trailing newline ("id\n").
        if not isinstance(task_id, str) or not TASK_ID.fullmatch(task_id):
            raise ParameterError(
                "task_id must be 1-64 letters, digits, '_', '.' or '-', starting with a "
                f"letter or digit, got {task_id!r}"
            )
        kind = params_class(mechanism)
        check_foreign_fields(mechanism, {k for k, v in parameters.items() if v is not None})
        given = {**(params.to_fields() if params is not None else {}), **parameters}
        time_precision, min_batch_size = _plain_int(time_precision), _plain_int(min_batch_size)
        check_int("time_precision", time_precision, 1, 366 * DAY)
        check_int("min_batch_size", min_batch_size, 1, 10**9)
        if not isinstance(sealed, bool):
            raise ParameterError("sealed must be true or false")
        if seal is not None and (not sealed or not isinstance(seal, SealKey)):
            raise ParameterError("only a sealed task carries a seal key (a SealKey)")
        declared, min_slice_size = _dimensions(dimensions, min_slice_size, min_batch_size)
        for name, value in (
            ("task_id", task_id),
            ("mechanism", mechanism),
            ("params", kind.from_fields(given)),
            ("time_precision", time_precision),
            ("min_batch_size", min_batch_size),
            ("sealed", sealed),
            ("dimensions", declared),
            ("min_slice_size", min_slice_size),
            ("seal", seal),
        ):
            object.__setattr__(self, name, value)
        self.mechanism_object  # noqa: B018  # validates the mechanism parameters now
        expected = self._compute_fingerprint()
        if fingerprint and fingerprint != expected:
            raise ParameterError("fingerprint does not match the task's parameters")
        object.__setattr__(self, "fingerprint", expected)
        if selection is not None and not isinstance(selection, dict):
            raise ParameterError("selection must be a JSON object")
        object.__setattr__(self, "selection", selection)

    def __getattr__(self, name: str) -> Any:
        # Only reached for names that are not attributes: a parameter of some mechanism.
        if name in PARAMETER_NAMES:
            return getattr(self.__dict__.get("params"), name, None)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @classmethod
    def create(cls, selection: dict[str, Any] | None = None, **params: Any) -> TaskConfig:
        """Return a new task; what the mechanism draws for a new task (a hash seed) is drawn.

        ``mechanism="auto"`` chooses the kind (:mod:`ldp_telemetry.shared.mechanisms.auto`) from
        ``epsilon``, ``domain`` or ``expected_distinct``, and ``max_report_bytes``, and
        records the comparison as ``selection``.
        """
        if params.get("mechanism") == auto.AUTO:
            _check_field_names(params, allowed=set(auto.AUTO_FIELDS))
            params, selection = auto.resolve(params)
        _check_field_names(params, allowed=set())
        kind = KINDS.get(params["mechanism"]) if isinstance(params["mechanism"], str) else None
        return cls(**(kind.defaults_for_new_task(params) if kind else params), selection=selection)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskConfig:
        """Return the task a :meth:`to_dict` produced (its fingerprint is checked)."""
        if not isinstance(data, dict):
            raise ParameterError("a task must be a JSON object")
        _check_field_names(data, allowed={*PUBLISHED, *SERVED, *CHECKED})
        protocol = data.get("protocol", PROTOCOL_VERSION)  # absent: a stored pre-1.0 task
        if protocol not in SPOKEN_PROTOCOLS:
            raise ParameterError(
                f"the task is for protocol {protocol!r}; this implementation speaks "
                f"{' and '.join(map(repr, SPOKEN_PROTOCOLS))}: upgrade ldp-telemetry"
            )
        fields = {key: value for key, value in data.items() if key in TASK_FIELDS}
        seal = SealKey.from_json(data["seal"]) if data.get("seal") is not None else None
        task = cls(**fields, selection=data.get("selection"), seal=seal)
        if "protocol" in data and protocol != task.protocol:  # 1.1 iff dimensions
            raise ParameterError(
                f"task {task.task_id!r} says protocol {protocol!r}, but "
                f"{'declares' if task.dimensions else 'does not declare'} dimensions: "
                f"its protocol is {task.protocol!r}"
            )
        if "derived" in data and data["derived"] != task.derived:
            raise DerivedMismatch(
                f"task {task.task_id!r} publishes derived integers {data['derived']!r}; its "
                f"parameters give {task.derived!r} here: refused"
            )
        return task

    @classmethod
    def from_stored(cls, data: dict[str, Any]) -> TaskConfig:
        """Return a task a collector kept, re-fingerprinting one kept before protocol 1.0.

        A record without ``protocol`` was fingerprinted from Python's float repr; its
        parameters are what they were, so its fingerprint is computed anew (RFC 8785).
        """
        if isinstance(data, dict) and "protocol" not in data:
            data = {key: value for key, value in data.items() if key != "fingerprint"}
        return cls.from_dict(data)

    @cached_property
    def mechanism_object(self) -> Mechanism:
        """Return the mechanism these parameters define."""
        return self.params.build()

    @property
    def protocol(self) -> str:
        """Return the protocol version the task is served with: 1.1 iff it declares dimensions
        or its mechanism needs 1.1 (a LOLOHA or numeric longitudinal variant), else 1.0."""
        if self.dimensions is not None:
            return PROTOCOL_VERSION_1_1
        return protocol_of(self.mechanism_object)

    @property
    def slice_count(self) -> int:
        """Return the number of slices its sums are kept in (1 without dimensions)."""
        return 1 if self.dimensions is None else self.dimensions.slice_count

    @property
    def derived(self) -> dict[str, Any]:
        """Return every integer a device derives from the parameters (PROTOCOL.md §1)."""
        return self.mechanism_object.derived()

    @property
    def asked_epsilon(self) -> float:
        """Return the epsilon asked for (for rr built from alpha/beta, the one they give)."""
        return self.mechanism_object.epsilon

    @property
    def effective_epsilon(self) -> float:
        """Return the epsilon actually implemented (never above the one asked for)."""
        return self.mechanism_object.effective_epsilon

    def floor_time(self, unix_seconds: float) -> int:
        """Return the start of the time bucket holding ``unix_seconds``."""
        return int(unix_seconds // self.time_precision) * self.time_precision

    def to_dict(self) -> dict[str, Any]:
        """Return the public configuration as a JSON-ready dict (None fields left out)."""
        data = self._set_fields()
        data["effective_epsilon"] = self.effective_epsilon
        mechanism = self.mechanism_object
        layer = longitudinal(mechanism)
        if layer is not None:  # one report spends ε₁; a value ε∞ for ever
            data["effective_epsilon_inf"] = layer.effective_epsilon_inf
        data.update(published(mechanism))
        if self.selection is not None:
            data["selection"] = self.selection
        if self.seal is not None:
            data["seal"] = self.seal.to_json()
        return data

    def _set_fields(self) -> dict[str, Any]:
        """Return the flat JSON fields: the common ones and the mechanism's set parameters."""
        return {
            "task_id": self.task_id,
            "mechanism": self.mechanism,
            **self.params.to_fields(),
            "time_precision": self.time_precision,
            "min_batch_size": self.min_batch_size,
            # Fingerprinted, and only when true (older tasks keep their fingerprints): a
            # task cannot be turned from sealed to plain without devices noticing.
            **({"sealed": True} if self.sealed else {}),
            # Likewise only when declared: a task without dimensions is byte for byte 1.0.
            **(
                {"dimensions": self.dimensions.to_json(), "min_slice_size": self.min_slice_size}
                if self.dimensions is not None
                else {}
            ),
            "protocol": self.protocol,
            "derived": self.derived,
            "fingerprint": self.fingerprint,
        }

    def canonical_form(self) -> str:
        """Return the RFC 8785 text the fingerprint hashes: every fingerprinted field."""
        fields = self._set_fields()
        fields.pop("fingerprint", None)  # what is hashed cannot include the hash
        return canonical_json(fields)

    def _compute_fingerprint(self) -> str:
        return hashlib.sha256(self.canonical_form().encode("utf-8")).hexdigest()[:32]


def _check_field_names(params: dict[str, Any], allowed: set[str]) -> None:
    """Raise ParameterError (not the constructor's TypeError) for unknown or missing fields."""
    unknown = set(params) - TASK_FIELDS - allowed
    if unknown:
        raise ParameterError(f"unknown task fields: {', '.join(sorted(map(str, unknown)))}")
    missing = [name for name in ("task_id", "mechanism") if name not in params]
    if missing:
        raise ParameterError(f"a task needs {' and '.join(missing)}")


def _dimensions(
    dimensions: Any, min_slice_size: Any, min_batch_size: int
) -> tuple[Dimensions | None, int | None]:
    """Return a task's checked dimensions and min_slice_size (None, None: none declared)."""
    if dimensions is None:
        if min_slice_size is not None:
            raise ParameterError("min_slice_size is for a task that declares dimensions")
        return None, None
    declared = Dimensions.parse(dimensions)
    if min_slice_size is None:
        return declared, default_min_slice_size(min_batch_size)
    size = check_int("min_slice_size", _plain_int(min_slice_size), 1, MAX_MIN_SLICE_SIZE)
    if size < min_batch_size:
        raise ParameterError(
            f"min_slice_size ({size}) may not be below the task's min_batch_size "
            f"({min_batch_size}): a slice is never answered for fewer reports than the task"
        )
    return declared, size


def _plain_int(value: Any) -> Any:
    """Return numpy integers as int (JSON needs it); anything else for the checks to refuse."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    return value
