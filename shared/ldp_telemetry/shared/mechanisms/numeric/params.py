"""The numeric kind's parameters: the range, buckets, scale and method, and the longitudinal option.

``longitudinal`` (method 1bit only) makes the task's reports re-randomize a permanent response
per bucket the device rounds to (:mod:`ldp_telemetry.shared.mechanisms.lifetime.numeric`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ldp_telemetry.shared.errors import ParameterError
from ldp_telemetry.shared.mechanisms import longitudinal
from ldp_telemetry.shared.mechanisms.base import Mechanism, Option, ParamsBase, as_float
from ldp_telemetry.shared.mechanisms.lifetime.numeric import repeated_one_bit_mean
from ldp_telemetry.shared.mechanisms.longitudinal import LONGITUDINAL_OPTION, LongitudinalSpec
from ldp_telemetry.shared.mechanisms.numeric.mechanism import (
    DEFAULT_BUCKETS,
    DEFAULT_ONE_BIT_BUCKETS,
    METHODS,
    SCALES,
    OneBitMean,
    SquareWave,
)
from ldp_telemetry.shared.wire import canonical_json


@dataclass(frozen=True)
class NumericParams(ParamsBase):
    """numeric: epsilon, the range [lo, hi], buckets, scale and method."""

    epsilon: float | None = None
    lo: float | None = None
    hi: float | None = None
    buckets: int | None = None
    scale: str | None = None
    method: str | None = None
    longitudinal: LongitudinalSpec | None = None

    name = "numeric"
    options = (
        Option("epsilon", "number", "Privacy parameter."),
        Option("lo", "number", "numeric: the range's low end (values below count as lo)."),
        Option("hi", "number", "numeric: the range's high end (values above count as hi)."),
        Option(
            "buckets",
            "integer",
            f"numeric: buckets over the range (default {DEFAULT_BUCKETS}; "
            f"1bit: {DEFAULT_ONE_BIT_BUCKETS}).",
        ),
        Option("scale", "string", "numeric: linear (default) or log (lo must be > 0)."),
        Option("method", "string", "numeric: sw (distribution; default) or 1bit (mean)."),
        LONGITUDINAL_OPTION,
    )

    def validate(self) -> None:
        """Check the range, the scale and the method; fill in the defaults."""
        for name in ("epsilon", "lo", "hi"):
            object.__setattr__(self, name, as_float(getattr(self, name)))
        spec = longitudinal.check_epsilon_left_out(self.epsilon, self.longitudinal)
        object.__setattr__(self, "longitudinal", spec)
        if spec is not None and self.method != "1bit":
            raise ParameterError(
                "a longitudinal numeric task takes method 1bit (the mean; a permanent bit per "
                "bucket); sw has no longitudinal layer"
            )
        self.require(*(("lo", "hi") if spec is not None else ("epsilon", "lo", "hi")))
        assert self.lo is not None and self.hi is not None
        for name in ("lo", "hi"):
            value = getattr(self, name)
            if not isinstance(value, float) or not math.isfinite(value):
                raise ParameterError(f"{name} must be a finite number")
        if not self.lo < self.hi:
            raise ParameterError(f"lo must be below hi, got [{self.lo}, {self.hi}]")
        one_bit = self.method == "1bit"
        defaults = {
            "buckets": DEFAULT_ONE_BIT_BUCKETS if one_bit else DEFAULT_BUCKETS,
            "scale": "linear",
            "method": "sw",
        }
        for name, default in defaults.items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, default)
        if self.scale not in SCALES:
            raise ParameterError(f"scale must be one of {', '.join(SCALES)}, got {self.scale!r}")
        if self.method not in METHODS:
            raise ParameterError(f"method must be one of {', '.join(METHODS)}, got {self.method!r}")
        if self.scale == "log" and self.lo <= 0:
            raise ParameterError("scale log needs lo > 0")

    def build(self) -> Mechanism:
        """Return the mechanism (longitudinal: a permanent bit per bucket, re-randomized)."""
        if self.longitudinal is not None:
            assert self.lo is not None and self.hi is not None and self.buckets is not None
            return repeated_one_bit_mean(
                self.longitudinal, self.lo, self.hi, self.buckets, canonical_json(self.to_fields())
            )
        kind = SquareWave if self.method == "sw" else OneBitMean
        return kind(
            epsilon=self.epsilon, lo=self.lo, hi=self.hi, buckets=self.buckets, scale=self.scale
        )
