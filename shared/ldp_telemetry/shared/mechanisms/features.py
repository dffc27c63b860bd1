"""Which optional features a built mechanism has: the one place that asks.

Every mechanism provides :class:`~ldp_telemetry.shared.mechanisms.base.Mechanism`. Some also can
discover frequent values without candidates
(:class:`~ldp_telemetry.shared.mechanisms.base.Discovering`), publish derived integers in the task
JSON (:class:`~ldp_telemetry.shared.mechanisms.base.Publishing`), state their variation ratio for
the shuffle bound (:class:`~ldp_telemetry.shared.mechanisms.base.StatesVariationRatio`), or wrap a
permanent response (:class:`~ldp_telemetry.shared.mechanisms.longitudinal.Longitudinal`). The task,
the shuffle bound, the client and the collector ask these functions and call what they return;
nothing outside :mod:`ldp_telemetry.shared.mechanisms` tests a mechanism's type or attributes.
"""

from __future__ import annotations

from typing import Any

from ldp_telemetry.shared.contract import PROTOCOL_VERSION
from ldp_telemetry.shared.mechanisms.base import (
    Discovering,
    Mechanism,
    Publishing,
    StatesVariationRatio,
)
from ldp_telemetry.shared.mechanisms.longitudinal import Longitudinal


def discoverer(mechanism: Mechanism) -> Discovering | None:
    """Return the mechanism as a discoverer, or None if it needs candidates."""
    return mechanism if isinstance(mechanism, Discovering) else None


def longitudinal(mechanism: Mechanism) -> Longitudinal | None:
    """Return the mechanism's longitudinal layer, or None if each report is fresh."""
    return mechanism if isinstance(mechanism, Longitudinal) else None


def protocol_of(mechanism: Mechanism) -> str:
    """Return the protocol version a task of this mechanism is served under: 1.0, or the
    later 1.x a mechanism needs (``protocol``: LOLOHA's 1.1); 1.0 tasks stay byte for byte."""
    return str(getattr(mechanism, "protocol", PROTOCOL_VERSION))


def published(mechanism: Mechanism) -> dict[str, Any]:
    """Return what the mechanism publishes in the task JSON ({} when nothing).

    A longitudinal task publishes its per-report channel's (both layers composed: what one
    report says); the permanent layer, which many reports reveal, is bounded by ε∞.
    """
    layer = longitudinal(mechanism)
    channel: Any = layer.instant if layer is not None else mechanism
    return channel.published() if isinstance(channel, Publishing) else {}


def stated_variation_ratio(mechanism: object) -> Any:
    """Return the ``shuffling.amplification.VariationRatio`` the mechanism states, or None."""
    return mechanism.variation_ratio() if isinstance(mechanism, StatesVariationRatio) else None
