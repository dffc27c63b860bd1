"""The one lookup from a mechanism's name to its parameter class.

A new mechanism is one module in this package and one line here. Everything outside
:mod:`ldp_telemetry.shared.mechanisms` (task, codec, client, collector, CLI, OpenAPI) asks this
module.
"""

from __future__ import annotations

from ldp_telemetry.shared.errors import ParameterError
from ldp_telemetry.shared.mechanisms.base import Option, ParamsBase, Plan
from ldp_telemetry.shared.mechanisms.grr import GeneralizedRandomizedResponseParams
from ldp_telemetry.shared.mechanisms.hh.params import HeavyHitterParams
from ldp_telemetry.shared.mechanisms.numeric.params import NumericParams
from ldp_telemetry.shared.mechanisms.olh import OptimizedLocalHashingParams
from ldp_telemetry.shared.mechanisms.oue import OptimizedUnaryEncodingParams
from ldp_telemetry.shared.mechanisms.rr import RandomizedResponseParams
from ldp_telemetry.shared.mechanisms.sketches.cms import CountMeanSketchParams
from ldp_telemetry.shared.mechanisms.sketches.hcms import HadamardCountMeanSketchParams
from ldp_telemetry.shared.mechanisms.ss import SubsetSelectionParams

KINDS: dict[str, type[ParamsBase]] = {
    "rr": RandomizedResponseParams,
    "grr": GeneralizedRandomizedResponseParams,
    "cms": CountMeanSketchParams,
    "hcms": HadamardCountMeanSketchParams,
    "olh": OptimizedLocalHashingParams,
    "hh": HeavyHitterParams,
    "numeric": NumericParams,
    "oue": OptimizedUnaryEncodingParams,
    "ss": SubsetSelectionParams,
}
MECHANISMS = tuple(KINDS)


def params_class(name: object) -> type[ParamsBase]:
    """Return the parameter class of a mechanism name, or raise ParameterError."""
    kind = KINDS.get(name) if isinstance(name, str) else None
    if kind is None:
        raise ParameterError(f"mechanism must be one of {', '.join(MECHANISMS)}, got {name!r}")
    return kind


def all_options() -> dict[str, Option]:
    """Return every parameter any mechanism takes, by name (first description wins)."""
    options: dict[str, Option] = {}
    for kind in KINDS.values():
        for option in kind.options:
            options.setdefault(option.name, option)
    return options


def check_foreign_fields(name: str, given: set[str]) -> None:
    """Raise ParameterError for fields that mechanism ``name`` does not take."""
    extra = given - set(KINDS[name].fields())
    if not extra:
        return
    exclusive = [kind.exclusive for kind in KINDS.values() if kind.exclusive]
    plain = extra - set().union(*(fields for fields, _ in exclusive))
    if plain:
        raise ParameterError(f"{name} takes no {', '.join(sorted(plain))}")
    for fields, message in exclusive:
        if extra & fields:
            raise ParameterError(message)


def plan(epsilon: float, domain_size: int, devices: int) -> list[tuple[str, Plan]]:
    """Return every mechanism that fits the workload, most accurate first (closed forms).

    Ties in the standard error go to the smaller report.
    """
    plans = [(name, kind.plan(epsilon, domain_size, devices)) for name, kind in KINDS.items()]
    fitting = [(name, p) for name, p in plans if p is not None]
    return sorted(fitting, key=lambda item: (round(item[1].std_error, 9), item[1].report_bits))
