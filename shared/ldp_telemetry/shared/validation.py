"""Checks shared by every parameter object; each error names the fix."""

from __future__ import annotations

import math
import numbers

from ldp_telemetry.shared.errors import ParameterError

MAX_EPSILON = 20.0  # beyond this, 32-bit thresholds cannot represent the flip probability


def check_epsilon(epsilon: object) -> float:
    """Return epsilon as a float if it is a finite number in (0, MAX_EPSILON]."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real):
        raise ParameterError(f"epsilon must be a number, got {type(epsilon).__name__}")
    value = float(epsilon)
    if not math.isfinite(value) or value <= 0:
        raise ParameterError(f"epsilon must be a finite number > 0, got {epsilon!r}")
    if value > MAX_EPSILON:
        raise ParameterError(f"epsilon must be at most {MAX_EPSILON}, got {epsilon!r}")
    return value


def check_int(name: str, value: object, minimum: int, maximum: int) -> int:
    """Return value if it is an int in [minimum, maximum]."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ParameterError(f"{name} must be an integer, got {type(value).__name__}")
    if not minimum <= int(value) <= maximum:
        raise ParameterError(f"{name} must be in [{minimum}, {maximum}], got {value}")
    return int(value)


def check_unit_interval(name: str, value: object) -> float:
    """Return value as a float if it is a number in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterError(f"{name} must be a number, got {type(value).__name__}")
    if not 0.0 <= float(value) <= 1.0:
        raise ParameterError(f"{name} must be in [0, 1], got {value!r}")
    return float(value)


def check_power_of_two(name: str, value: int) -> int:
    """Return value if it is a power of two."""
    if value & (value - 1):
        raise ParameterError(f"{name} must be a power of two (e.g. 1024), got {value}")
    return value
