"""A task: the immutable, public parameter set that clients privatize with.

A task names its mechanism (``rr``, ``grr``, ``cms``, ``hcms``) and every parameter the
mechanism needs, the width of its time buckets and the smallest number of reports an
estimate may be released for. Its fingerprint hashes all of them, so a report made under
other parameters is recognised and refused; changing anything means a new task.
"""

from __future__ import annotations

import hashlib
import json
import numbers
import re
import secrets
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any

from shared.cms import CountMeanSketch
from shared.errors import ParameterError
from shared.grr import GeneralizedRandomizedResponse
from shared.hashing import MAX_SEED
from shared.hcms import HadamardCountMeanSketch
from shared.rr import RandomizedResponse
from shared.validation import check_int

Mechanism = (RandomizedResponse | GeneralizedRandomizedResponse | CountMeanSketch
             | HadamardCountMeanSketch)
MECHANISMS = ("rr", "grr", "cms", "hcms")
DAY = 86_400
TASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
_PARAMETERS = {  # what each mechanism takes besides epsilon
    "rr": set(), "grr": {"domain"}, "cms": {"k", "m", "hash_seed"},
    "hcms": {"k", "m", "hash_seed"},
}


@dataclass(frozen=True)
class TaskConfig:
    """A validated task; build one with :meth:`create` or :meth:`from_dict`."""

    task_id: str
    mechanism: str
    epsilon: float | None = None
    alpha: float | None = None
    beta: float | None = None
    k: int | None = None
    m: int | None = None
    hash_seed: int | None = None
    domain: tuple[str, ...] | None = None
    time_precision: int = DAY
    min_batch_size: int = 100
    fingerprint: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        # fullmatch: with match, "$" also matches before a trailing newline ("id\n").
        if not isinstance(self.task_id, str) or not TASK_ID.fullmatch(self.task_id):
            raise ParameterError(
                "task_id must be 1-64 letters, digits, '_', '.' or '-', starting with a "
                f"letter or digit, got {self.task_id!r}")
        if self.mechanism not in MECHANISMS:
            raise ParameterError(f"mechanism must be one of {', '.join(MECHANISMS)}, "
                                 f"got {self.mechanism!r}")
        extra = {name for name in ("k", "m", "hash_seed", "domain")
                 if getattr(self, name) is not None} - _PARAMETERS[self.mechanism]
        if extra:
            raise ParameterError(f"{self.mechanism} takes no {', '.join(sorted(extra))}")
        if self.mechanism != "rr" and (self.alpha is not None or self.beta is not None):
            raise ParameterError("alpha and beta are only for rr")
        self._normalize_numbers()
        check_int("time_precision", self.time_precision, 1, 366 * DAY)
        check_int("min_batch_size", self.min_batch_size, 1, 10**9)
        self._normalize_domain()
        self.mechanism_object  # noqa: B018  # validates the mechanism parameters now
        expected = self._compute_fingerprint()
        if self.fingerprint and self.fingerprint != expected:
            raise ParameterError("fingerprint does not match the task's parameters")
        object.__setattr__(self, "fingerprint", expected)

    def _normalize_numbers(self) -> None:
        """Store plain int and float: numpy scalars are not JSON, and 4 must fingerprint as 4.0.

        Bools and non-numbers are left for the checks to refuse.
        """
        for name in ("epsilon", "alpha", "beta"):
            value = getattr(self, name)
            if isinstance(value, numbers.Real) and not isinstance(value, bool):
                object.__setattr__(self, name, float(value))
        for name in ("k", "m", "hash_seed", "time_precision", "min_batch_size"):
            value = getattr(self, name)
            if isinstance(value, numbers.Integral) and not isinstance(value, bool):
                object.__setattr__(self, name, int(value))

    def _normalize_domain(self) -> None:
        """Store the domain as a tuple (it is hashed and compared)."""
        if self.domain is None:
            return
        # tuple("abc") would silently turn a string into the domain ('a', 'b', 'c')
        if isinstance(self.domain, str | bytes) or not isinstance(self.domain, Sequence):
            raise ParameterError("domain must be a list of distinct strings, got "
                                 f"{type(self.domain).__name__}")
        object.__setattr__(self, "domain", tuple(self.domain))

    @classmethod
    def create(cls, **params: Any) -> TaskConfig:
        """Return a new task; a sketch task without ``hash_seed`` gets a random one."""
        _check_field_names(params, allowed=set())
        if params.get("mechanism") in ("cms", "hcms") and params.get("hash_seed") is None:
            params["hash_seed"] = secrets.randbelow(MAX_SEED + 1)
        return cls(**params)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskConfig:
        """Return the task a :meth:`to_dict` produced (its fingerprint is checked)."""
        if not isinstance(data, dict):
            raise ParameterError("a task must be a JSON object")
        _check_field_names(data, allowed={"effective_epsilon"})
        return cls(**{key: value for key, value in data.items() if key in _FIELDS})

    @cached_property
    def mechanism_object(self) -> Mechanism:
        """Return the mechanism these parameters define."""
        if self.mechanism == "rr":
            return RandomizedResponse(epsilon=self.epsilon, alpha=self.alpha, beta=self.beta)
        if self.epsilon is None:
            raise ParameterError(f"{self.mechanism} needs epsilon")
        if self.mechanism == "grr":
            if self.domain is None:
                raise ParameterError("grr needs a domain: a list of distinct strings")
            return GeneralizedRandomizedResponse(epsilon=self.epsilon, domain=self.domain)
        missing = [name for name in ("k", "m", "hash_seed") if getattr(self, name) is None]
        if missing:
            raise ParameterError(f"{self.mechanism} needs {', '.join(missing)}")
        sketch = CountMeanSketch if self.mechanism == "cms" else HadamardCountMeanSketch
        return sketch(epsilon=self.epsilon, k=self.k, m=self.m,  # type: ignore[arg-type]
                      hash_seed=self.hash_seed)  # type: ignore[arg-type]

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
        return data

    def _set_fields(self) -> dict[str, Any]:
        """Return the fields that are set (not None) as JSON values, the domain as a list."""
        data = {key: value for key, value in asdict(self).items() if value is not None}
        if self.domain is not None:
            data["domain"] = list(self.domain)
        return data

    def _compute_fingerprint(self) -> str:
        fields = self._set_fields()
        fields.pop("fingerprint", None)  # what is hashed cannot include the hash
        canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:32]


_FIELDS = frozenset(TaskConfig.__dataclass_fields__)


def _check_field_names(params: dict[str, Any], allowed: set[str]) -> None:
    """Raise ParameterError (not the constructor's TypeError) for unknown or missing fields."""
    unknown = set(params) - _FIELDS - allowed
    if unknown:
        raise ParameterError(f"unknown task fields: {', '.join(sorted(map(str, unknown)))}")
    missing = [name for name in ("task_id", "mechanism") if name not in params]
    if missing:
        raise ParameterError(f"a task needs {' and '.join(missing)}")
