"""The device's privacy ledger: what each record would spend, and the caps the app sets.

A longitudinal task's permanent response (PRR) of a value is derived from the device secret, the
task id, the task's mechanism fields and the value (PROTOCOL.md §3.9): the same every time while
those stay the same, and a fresh, independent one as soon as any mechanism field changes. The
collector is not trusted and may re-publish a task under the same id with other fields (even only
``flip``), or ask the same question under a new task id. Left alone, each re-publish would buy a new
PRR of every device's value, and the "ε∞ for ever" bound would not hold. So the device keeps, in its
storage beside the queue (:mod:`ldp_telemetry.client.storage`, one rule for every storage:
:func:`ldp_telemetry.client.storage.admit_to`):

- per task id, the permanent-layer **configurations** it has answered under (the first,
  then any the app allowed), each with its ε∞ (the task's ``effective_epsilon_inf``);
- per task id, configuration and value, that a PRR was drawn and its ε∞ — keyed by
  ``HMAC-SHA256(device secret, "ldp-telemetry ledger\\0" ‖ task_id ‖ "\\0" ‖ value)``,
  never by the value (a LOLOHA task: by the device's hashed bucket of the value, so a
  task draws, and is charged, at most g PRRs whatever its values do). ``stats()`` shows
  per task id the PRRs drawn and their ε∞ (``permanent_responses``, ``epsilon_inf``);
- per device period (``epsilon_period`` seconds, UTC-aligned; one day by default), the
  ε of the reports made in it (each new report's task ``effective_epsilon``; a resent,
  memoized report costs nothing).

The app sets three caps (constructor arguments, ``LDP_*`` variables, see
:mod:`ldp_telemetry.client.settings`):

``republished_epsilon_inf`` (default 0)
    the ε∞ a task id may spend, for its life, on permanent configurations after the first.
    The first configuration a device answers a task id under is adopted; a record under
    another configuration is refused (``config_changed``) unless the ε∞ of the task's
    later configurations, this one included, stays within this cap — then it is adopted
    (charged once, whatever the value). Records under an adopted configuration are
    answered (its PRRs are already fixed). By default no task id ever gets a second PRR.
    A task id answered under a permanent layer and re-published without one is refused
    too: its reports would spend ε every period with no lifetime bound.
``max_epsilon_inf`` (default 64)
    the device's lifetime ε∞: the sum of ε∞ over every PRR drawn (per task id,
    configuration and value), across all tasks. A record that would draw a new PRR
    beyond it is dropped (``epsilon_inf_exhausted``).
``max_epsilon_per_period`` (default none)
    the ε of all new reports in one device period, across all tasks. A report beyond it
    is dropped (``epsilon_exhausted``). Off by default: each task id already sends at
    most ``reports_per_period`` reports per period, and the task ids are the app's own.

Every sum is compared with its cap allowing 1e-9 for rounding. None lifts a cap. A
refusal is decided before anything is privatized and changes nothing in the ledger.
Rotating the device secret (deleting ``device.key``) is a deliberate new start: new
PRRs and, with a new data_dir, a new ledger. In memory (no data_dir) the ledger lives as
long as the process — and so does the device secret it protects.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from ldp_telemetry.client.budget import device_key
from ldp_telemetry.shared.mechanisms.features import longitudinal
from ldp_telemetry.shared.task import TaskConfig

TOLERANCE = 1e-9  # ε are floats: a sum equal to its cap must not be refused by rounding


@dataclass(frozen=True)
class Limits:
    """The caps a record is checked against (from
    :class:`ldp_telemetry.client.settings.Settings`)."""

    reports_per_period: int
    republished_epsilon_inf: float | None = 0.0
    max_epsilon_inf: float | None = 64.0
    max_epsilon_per_period: float | None = None
    epsilon_period: int = 86_400


@dataclass(frozen=True)
class Permanent:
    """A longitudinal task's permanent layer as the ledger sees it, for one value."""

    configuration: str  # the digest of the mechanism fields the PRR is derived from
    epsilon_inf: float  # the task's effective ε∞: what a new PRR of the value spends
    value_key: bytes  # HMAC of the value under the device secret (never the value)


@dataclass(frozen=True)
class Charge:
    """What a new report of a record spends: its ε in a device period, maybe a PRR."""

    epsilon: float
    period: int  # the start of the device period (Unix seconds)
    permanent: Permanent | None  # None: the task has no permanent layer


def charge_of(
    task: TaskConfig, secret: bytes, value: bytes, now: float, epsilon_period: int
) -> Charge:
    """Return what a new report of a canonical ``value`` for ``task`` at ``now`` spends."""
    layer = longitudinal(task.mechanism_object)
    permanent = None
    if layer is not None:
        # What the PRR is drawn for: the value, or (LOLOHA) the device's bucket of it, so
        # values sharing a bucket are charged once and a task never more than g times.
        drawn_for = layer.for_device(device_key(secret, task)).drawn_for(value)
        permanent = Permanent(
            layer.configuration,
            float(layer.effective_epsilon_inf),
            value_key(secret, task, drawn_for),
        )
    period = int(now // epsilon_period) * epsilon_period
    return Charge(float(task.effective_epsilon), period, permanent)


def value_key(secret: bytes, task: TaskConfig, value: bytes) -> bytes:
    """Return the key a value's PRRs are recorded under: bound to the task id, not its fields."""
    message = b"ldp-telemetry ledger\x00" + task.task_id.encode("ascii") + b"\x00" + value
    return hmac.new(secret, message, hashlib.sha256).digest()


def within(spent: float, cost: float, cap: float | None) -> bool:
    """Return whether spending ``cost`` more keeps ``spent`` within ``cap`` (None: no cap)."""
    return cap is None or spent + cost <= cap + TOLERANCE
