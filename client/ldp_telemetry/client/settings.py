"""Client settings: constructor arguments first, then ``LDP_*`` variables, then defaults.

===========================  ===============================  =============================
argument                     environment variable             default
===========================  ===============================  =============================
``endpoint``                 ``LDP_ENDPOINT``                 (required)
``upload_key``               ``LDP_UPLOAD_KEY``               none
``data_dir``                 ``LDP_DATA_DIR``                 none (memory only)
``enabled``                  ``LDP_DISABLED=1`` (off)         on
``batch_size``               ``LDP_BATCH_SIZE``               500 reports
``max_batch_bytes``          ``LDP_MAX_BATCH_BYTES``          1 MiB (JSON, before gzip)
``flush_interval``           ``LDP_FLUSH_INTERVAL``           30 s
``max_queue``                ``LDP_MAX_QUEUE``                10,000 reports
``max_queue_bytes``          ``LDP_MAX_QUEUE_BYTES``          16 MiB
``reports_per_period``       ``LDP_REPORTS_PER_PERIOD``       1 (``none``: 100,000)
``republished_epsilon_inf``  ``LDP_REPUBLISHED_EPSILON_INF``  0 (``none``: no cap)
``max_epsilon_inf``          ``LDP_MAX_EPSILON_INF``          64 (``none``: no cap)
``max_epsilon_per_period``   ``LDP_MAX_EPSILON_PER_PERIOD``   none (no cap)
``epsilon_period``           ``LDP_EPSILON_PERIOD``           86,400 s
``atexit_timeout``           ``LDP_ATEXIT_TIMEOUT``           2 s (``none``: no exit flush)
===========================  ===============================  =============================

The privacy ledger's caps (``republished_epsilon_inf``, ``max_epsilon_inf``,
``max_epsilon_per_period`` per ``epsilon_period``) are explained in
:mod:`ldp_telemetry.client.privacy_ledger`.

A batch holds at most ``batch_size`` reports and ``max_batch_bytes`` of uncompressed JSON
(the collector refuses bodies over its ``MAX_BODY_BYTES``, 4 MiB after gzip, and more
than ``MAX_REPORTS_PER_BATCH`` reports, with 413; the uploader then halves the batch).
Timeouts and retries are small config objects (:class:`Timeouts`, :class:`RetryPolicy`).
Every invalid value raises :class:`ConfigurationError` naming the setting.
"""

from __future__ import annotations

import enum
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from ldp_telemetry.client.errors import ConfigurationError
from ldp_telemetry.client.privacy_ledger import Limits

T = TypeVar("T")


class Default(enum.Enum):
    """Marks an argument left unset, where None is itself a meaningful value."""

    DEFAULT = "DEFAULT"


DEFAULT = Default.DEFAULT
MAX_BATCH_SIZE = 5000  # the aggregator's default MAX_REPORTS_PER_BATCH
MAX_BATCH_BYTES = 4 << 20  # the aggregator's default MAX_BODY_BYTES (after gzip)
# The memo of a period's reports is kept per value, so even "no limit" (None) has one:
# it bounds the memo's memory and disk use (about 0.5 KB per report).
MAX_REPORTS_PER_PERIOD = 100_000
_NONE_IS_A_VALUE = {
    "reports_per_period",
    "atexit_timeout",
    "republished_epsilon_inf",
    "max_epsilon_inf",
    "max_epsilon_per_period",
}
MAX_EPSILON_PERIOD = 366 * 86_400
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off", ""}


@dataclass(frozen=True)
class Timeouts:
    """Per-attempt network timeouts in seconds.

    ``config`` bounds one fetch of a task's configuration, made by the uploader thread
    (``record`` never fetches).
    """

    connect: float = 5.0
    read: float = 10.0
    config: float = 10.0

    def __post_init__(self) -> None:
        for name in ("connect", "read", "config"):
            _positive(f"timeouts.{name}", getattr(self, name))


@dataclass(frozen=True)
class RetryPolicy:
    """How one upload is retried on connection errors, timeouts, 429 and 5xx.

    Waits grow as ``backoff * 2**attempt`` plus up to ``jitter`` seconds, capped at
    ``backoff_max``; a Retry-After answer is honoured. Nothing is retried once
    ``deadline`` seconds have passed since the first attempt.
    """

    max_retries: int = 5
    backoff: float = 0.5
    backoff_max: float = 30.0
    jitter: float = 0.5
    deadline: float = 60.0

    def __post_init__(self) -> None:
        if (
            isinstance(self.max_retries, bool)
            or not isinstance(self.max_retries, int)
            or not 0 <= self.max_retries <= 100
        ):
            raise ConfigurationError("retry.max_retries must be an integer in [0, 100]")
        for name in ("backoff", "backoff_max", "jitter"):
            _non_negative(f"retry.{name}", getattr(self, name))
        _positive("retry.deadline", self.deadline)


@dataclass(frozen=True)
class Settings:
    """Every resolved setting of a :class:`client.Client`."""

    endpoint: str
    upload_key: str | None = None
    data_dir: Path | None = None
    enabled: bool = True
    batch_size: int = 500
    max_batch_bytes: int = 1 << 20
    flush_interval: float = 30.0
    max_queue: int = 10_000
    max_queue_bytes: int = 16 << 20
    reports_per_period: int | None = 1
    republished_epsilon_inf: float | None = 0.0
    max_epsilon_inf: float | None = 64.0
    max_epsilon_per_period: float | None = None
    epsilon_period: int = 86_400
    atexit_timeout: float | None = 2.0
    timeouts: Timeouts = field(default_factory=Timeouts)
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    def __post_init__(self) -> None:
        _int_in("batch_size", self.batch_size, 1, MAX_BATCH_SIZE)
        _int_in("max_batch_bytes", self.max_batch_bytes, 1024, MAX_BATCH_BYTES)
        _positive("flush_interval", self.flush_interval)
        _int_in("max_queue", self.max_queue, 1, 10**8)
        _int_in("max_queue_bytes", self.max_queue_bytes, 1024, 1 << 40)
        if self.reports_per_period is not None:
            _int_in("reports_per_period", self.reports_per_period, 1, MAX_REPORTS_PER_PERIOD)
        if self.republished_epsilon_inf is not None:
            _non_negative("republished_epsilon_inf", self.republished_epsilon_inf)
        for name in ("max_epsilon_inf", "max_epsilon_per_period"):
            if getattr(self, name) is not None:
                _positive_epsilon(name, getattr(self, name))
        _int_in("epsilon_period", self.epsilon_period, 1, MAX_EPSILON_PERIOD)
        if self.atexit_timeout is not None:
            _positive("atexit_timeout", self.atexit_timeout)
        if not isinstance(self.timeouts, Timeouts):
            raise ConfigurationError("timeouts must be a client.Timeouts")
        if not isinstance(self.retry, RetryPolicy):
            raise ConfigurationError("retry must be a client.RetryPolicy")

    @property
    def report_limit(self) -> int:
        """Return the reports allowed per task and period (the memo's cap when None)."""
        if self.reports_per_period is None:
            return MAX_REPORTS_PER_PERIOD
        return self.reports_per_period

    @property
    def limits(self) -> Limits:
        """Return the caps every record is checked against (see :mod:`..privacy_ledger`)."""
        return Limits(
            reports_per_period=self.report_limit,
            republished_epsilon_inf=self.republished_epsilon_inf,
            max_epsilon_inf=self.max_epsilon_inf,
            max_epsilon_per_period=self.max_epsilon_per_period,
            epsilon_period=self.epsilon_period,
        )

    @classmethod
    def resolve(
        cls,
        arguments: Mapping[str, Any],
        *,
        env: Mapping[str, str] | None = None,
        needs_http: bool = True,
    ) -> Settings:
        """Return settings from explicit arguments, then ``env``, then defaults.

        An argument is unset when it is :data:`DEFAULT`, or None where None means nothing
        (for ``reports_per_period`` None is "no limit", for ``atexit_timeout`` "no flush").

        ``needs_http`` is False when a custom transport is given: the endpoint is then
        only a label and need not be an http(s) URL.
        """
        env = os.environ if env is None else env
        given = {
            name: value
            for name, value in arguments.items()
            if value is not DEFAULT and (value is not None or name in _NONE_IS_A_VALUE)
        }
        for name, (variable, parse) in _ENVIRONMENT.items():
            if name not in given and env.get(variable) is not None:
                given[name] = _parse(variable, env[variable], parse)
        if "enabled" not in given and env.get("LDP_DISABLED") is not None:
            given["enabled"] = not _parse("LDP_DISABLED", env["LDP_DISABLED"], _boolean)
        if "endpoint" not in given:
            raise ConfigurationError(
                "endpoint is required: pass Client(endpoint) or set "
                "LDP_ENDPOINT, e.g. https://telemetry.example.com"
            )
        given["endpoint"] = _check_endpoint(given["endpoint"], needs_http)
        if given.get("data_dir") is not None:
            given["data_dir"] = Path(given["data_dir"]).expanduser()
        return cls(**given)


def _check_endpoint(endpoint: object, needs_http: bool) -> str:
    if not isinstance(endpoint, str) or not endpoint:
        raise ConfigurationError("endpoint must be a non-empty string URL")
    if needs_http:
        parts = urlsplit(endpoint)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigurationError(
                f"endpoint must be an http:// or https:// URL with a host, got {endpoint!r}"
            )
    return endpoint.rstrip("/")


def _parse(variable: str, text: str, parse: Callable[[str], T]) -> T:
    try:
        return parse(text.strip())
    except ValueError:
        raise ConfigurationError(
            f"environment variable {variable}={text!r} is not a valid "
            f"{getattr(parse, '__name__', 'value')}"
        ) from None


def _boolean(text: str) -> bool:
    if text.lower() in _TRUE:
        return True
    if text.lower() in _FALSE:
        return False
    raise ValueError(text)


def _optional_int(text: str) -> int | None:
    return None if text.lower() == "none" else int(text)


def _optional_float(text: str) -> float | None:
    return None if text.lower() == "none" else float(text)


_ENVIRONMENT: dict[str, tuple[str, Callable[[str], Any]]] = {
    "endpoint": ("LDP_ENDPOINT", str),
    "upload_key": ("LDP_UPLOAD_KEY", str),
    "data_dir": ("LDP_DATA_DIR", str),
    "batch_size": ("LDP_BATCH_SIZE", int),
    "max_batch_bytes": ("LDP_MAX_BATCH_BYTES", int),
    "flush_interval": ("LDP_FLUSH_INTERVAL", float),
    "max_queue": ("LDP_MAX_QUEUE", int),
    "max_queue_bytes": ("LDP_MAX_QUEUE_BYTES", int),
    "reports_per_period": ("LDP_REPORTS_PER_PERIOD", _optional_int),
    "republished_epsilon_inf": ("LDP_REPUBLISHED_EPSILON_INF", _optional_float),
    "max_epsilon_inf": ("LDP_MAX_EPSILON_INF", _optional_float),
    "max_epsilon_per_period": ("LDP_MAX_EPSILON_PER_PERIOD", _optional_float),
    "epsilon_period": ("LDP_EPSILON_PERIOD", int),
    "atexit_timeout": ("LDP_ATEXIT_TIMEOUT", _optional_float),
}


def _int_in(name: str, value: object, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigurationError(f"{name} must be an integer in [{low}, {high}], got {value!r}")


def _positive(name: str, value: object) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ConfigurationError(f"{name} must be a finite number of seconds > 0, got {value!r}")


def _non_negative(name: str, value: object) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
    ):
        raise ConfigurationError(f"{name} must be a finite number >= 0, got {value!r}")


def _positive_epsilon(name: str, value: object) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ConfigurationError(f"{name} must be a finite epsilon > 0 or None, got {value!r}")
