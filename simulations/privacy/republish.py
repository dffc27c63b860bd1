"""A collector that re-publishes a longitudinal task every day, against the SDK's privacy ledger.

Every device holds "yes" for a longitudinal rr task (ε∞ = 1, flip 0.2) and records it
once a day for 30 days. The collector is malicious in one of two ways:

- **same task id**, a field changed every day (only ``flip``: 0.200, 0.205, …) — each
  change is a new permanent configuration, so a device without the ledger draws a new,
  independent permanent response (PRR) every day;
- **new task id** every day with the same fields (possible only when the app records
  under task ids it takes from the collector) — a new id is a new device key, so again a
  new PRR every day.

Each device runs the SDK's own rule (:func:`ldp_telemetry.client.storage.admit_to` through
:class:`ldp_telemetry.client.storage.MemoryStorage`, the charges of
:func:`ldp_telemetry.client.privacy_ledger.charge_of`) and the real permanent responses (HMAC-DRBG
from the device's seeded secret); only the instantaneous noise comes from the run's seeded
generator. The attacker knows every configuration and links every report of a device; it computes
the exact posterior that the value is yes (prior 1/2): reports under one (task id, configuration)
share a PRR, PRRs of different ones are independent. If the device drew PRRs worth E of ε∞ in
total, no report sequence can move that posterior past e^E/(1+e^E).
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ldp_telemetry.client.budget import device_key, lookup_key
from ldp_telemetry.client.privacy_ledger import Limits, charge_of
from ldp_telemetry.client.storage import Admission, MemoryStorage, Pending, Slot
from ldp_telemetry.shared import TaskConfig
from ldp_telemetry.shared.mechanisms.features import longitudinal
from simulations.common import plotting
from simulations.common.settings import RunSettings, progress
from simulations.common.tables import Column, Table

NAME = "republish"
SUMMARY = (
    "a collector re-publishing a longitudinal task daily (or asking under a new task id): "
    "the attacker's posterior with and without the SDK's privacy ledger"
)
DAYS = 30
DAY = 86_400
EPSILON_INF, FLIP, FLIP_STEP = 1.0, 0.2, 0.005
QUICK, FULL = 200, 2_000  # devices per scenario and setting


@functools.cache
def same_id(day: int) -> TaskConfig:
    """Return the task the collector publishes on ``day``: one id, a new flip each day."""
    return _task("q", FLIP + FLIP_STEP * day)


@functools.cache
def new_id(day: int) -> TaskConfig:
    """Return the task the collector publishes on ``day``: the same fields, a new id."""
    return _task(f"q-{day}", FLIP)


def _task(task_id: str, flip: float) -> TaskConfig:
    return TaskConfig.create(
        task_id=task_id,
        mechanism="rr",
        longitudinal={"epsilon_inf": EPSILON_INF, "flip": round(flip, 6)},
    )


SCENARIOS: dict[str, Callable[[int], TaskConfig]] = {
    "same task id, flip changed daily": same_id,
    "new task id daily": new_id,
}
SETTINGS: dict[str, Limits] = {
    "no ledger": Limits(1, republished_epsilon_inf=None, max_epsilon_inf=None),
    "ledger, SDK defaults": Limits(1),
    "ledger, app caps 2 / 3": Limits(1, republished_epsilon_inf=2.0, max_epsilon_inf=3.0),
}


def bound(scenario: str, limits: Limits) -> float:
    """Return the most ε∞ the ledger lets a device spend in a scenario (its PRRs' sum)."""
    layer = longitudinal(same_id(0).mechanism_object)
    if layer is None:
        raise TypeError("the re-published task must be longitudinal")
    epsilon_inf = float(layer.effective_epsilon_inf)
    spent = DAYS * epsilon_inf  # one new PRR a day at most
    if (
        scenario == "same task id, flip changed daily"
        and limits.republished_epsilon_inf is not None
    ):
        spent = min(spent, epsilon_inf + limits.republished_epsilon_inf)
    if limits.max_epsilon_inf is not None:
        spent = min(spent, limits.max_epsilon_inf)
    return spent


@dataclass
class Device:
    """One device: its secret, its storage and what the attacker has seen from it."""

    secret: bytes
    storage: MemoryStorage
    seen: dict[tuple[str, str], list[int]]  # (task id, fingerprint) -> reports (1 = yes)
    prrs: int = 0
    sent: int = 0


def run_device(
    scenario: Callable[[int], TaskConfig], limits: Limits, rng: np.random.Generator
) -> tuple[list[float], Device]:
    """Return the attacker's posterior of yes after each day, and the device."""
    device = Device(rng.bytes(32), MemoryStorage(max_queue=10 * DAYS, max_bytes=1 << 20), {})
    tasks: dict[tuple[str, str], TaskConfig] = {}
    posteriors = []
    for day in range(DAYS):
        task = scenario(day)
        if _record(device, task, day * DAY, limits, rng) is Admission.NEW:
            tasks[task.task_id, task.fingerprint] = task
        posteriors.append(posterior(device.seen, tasks))
    return posteriors, device


def _record(
    device: Device, task: TaskConfig, now: int, limits: Limits, rng: np.random.Generator
) -> Admission:
    """Record yes as Client.record does; the report is kept for the attacker."""
    value = task.mechanism_object.canonical(True)
    period = task.floor_time(now)
    slot = Slot(
        task.task_id,
        period,
        period + task.time_precision,
        lookup_key(device.secret, task, period, value),
    )
    charge = charge_of(task, device.secret, value, now, limits.epsilon_period)
    before = device.storage.lifetime_epsilon_inf()

    def make() -> Pending:
        mechanism = task.mechanism_object.for_device(device_key(device.secret, task))
        report = int(mechanism.privatize(True, rng))
        device.seen.setdefault((task.task_id, task.fingerprint), []).append(report)
        return Pending(task.task_id, os.urandom(8).hex(), "{}")

    admission = device.storage.admit(slot, charge, limits, make)
    device.sent += admission is Admission.NEW
    device.prrs += device.storage.lifetime_epsilon_inf() > before
    return admission


def posterior(
    seen: dict[tuple[str, str], list[int]], tasks: dict[tuple[str, str], TaskConfig]
) -> float:
    """Return P(yes | every report seen), prior 1/2: one shared PRR per configuration.

    Per configuration, P(reports | v) = Σ_b P(PRR = b | v) · Π P(report | b), with the
    report a flip of b with the configuration's flip probability g.
    """
    log_ratio = 0.0
    for key, reports in seen.items():
        option: Any = tasks[key].mechanism_object
        g = float(option.flip)
        ones = sum(reports)
        zeros = len(reports) - ones
        given_one = ones * math.log(1 - g) + zeros * math.log(g)
        given_zero = ones * math.log(g) + zeros * math.log(1 - g)
        p_yes, p_no = float(option.permanent.p11), float(option.permanent.p10)
        yes = np.logaddexp(math.log(p_yes) + given_one, math.log(1 - p_yes) + given_zero)
        no = np.logaddexp(math.log(p_no) + given_one, math.log(1 - p_no) + given_zero)
        log_ratio += float(yes - no)
    return 0.5 * (1 + math.tanh(0.5 * log_ratio))


def simulate(devices: int, rng: np.random.Generator, show: bool = False) -> list[dict[str, Any]]:
    """Return one row per scenario and setting: posteriors per day, PRRs, reports, bound."""
    rows = []
    for scenario, publish in SCENARIOS.items():
        for label, limits in SETTINGS.items():
            curves, prrs, sent = [], [], []
            for _ in progress(range(devices), f"{label} / {scenario}", show):
                curve, device = run_device(publish, limits, rng)
                curves.append(curve)
                prrs.append(device.prrs)
                sent.append(device.sent)
            by_day = np.array(curves)
            spent = bound(scenario, limits)
            rows.append(
                {
                    "scenario": scenario,
                    "setting": label,
                    "prrs": float(np.mean(prrs)),
                    "sent": float(np.mean(sent)),
                    "epsilon_bound": spent,
                    "posterior_bound": 1 / (1 + math.exp(-spent)),
                    "mean": by_day.mean(axis=0).tolist(),
                    "max": by_day.max(axis=0).tolist(),
                }
            )
    return rows


def plot(rows: list[dict[str, Any]], path: Path) -> Path:
    """Draw the attacker's mean posterior per day, one panel per scenario, with the bounds."""
    fig, panels = plotting.figure(panels=len(SCENARIOS), width=6.0, height=4.4)
    days = np.arange(1, DAYS + 1)
    for axes, scenario in zip(panels, SCENARIOS, strict=True):
        for index, row in enumerate(r for r in rows if r["scenario"] == scenario):
            color = f"C{index}"
            axes.plot(days, row["mean"], "o-", color=color, markersize=3, label=row["setting"])
            if row["posterior_bound"] < 0.999:
                axes.axhline(row["posterior_bound"], color=color, linestyle="--", linewidth=1)
        axes.set_ylim(0.45, 1.02)
        axes.set_xlabel("day (one report a day)")
        axes.set_ylabel("attacker's mean posterior of the true value")
        axes.set_title(scenario, fontsize=10)
        axes.legend(fontsize=8, loc="lower right")
    return plotting.save(fig, path)


def table(rows: list[dict[str, Any]], devices: int) -> Table:
    """Return the rows at day 30 (mean and largest posterior) beside the bound."""
    flat = [{**row, "mean_last": row["mean"][-1], "max_last": row["max"][-1]} for row in rows]
    return Table(
        f"A collector re-publishing daily for {DAYS} days: the attacker's posterior",
        [
            Column("scenario", "collector"),
            Column("setting", "device"),
            Column("sent", "reports sent", "{:.1f}"),
            Column("prrs", "PRRs drawn", "{:.1f}"),
            Column("epsilon_bound", "ε∞ bound", "{:.3f}"),
            Column("posterior_bound", "posterior bound", "{:.3f}"),
            Column("mean_last", "mean posterior", "{:.3f}"),
            Column("max_last", "largest posterior", "{:.3f}"),
        ],
        flat,
        notes=(
            f"rr, ε∞ = {EPSILON_INF:g}, flip {FLIP:g} (+{FLIP_STEP:g} a day when re-published); "
            f"{devices:,} devices holding yes, one record a day; prior 1/2. App caps 2 / 3: "
            "republished_epsilon_inf = 2, max_epsilon_inf = 3. Bound: e^E/(1+e^E), E the ε∞ "
            "the ledger lets a device spend."
        ),
    )


def run(settings: RunSettings) -> list[Path]:
    """Compute, plot and tabulate; return the files written."""
    devices = QUICK if settings.quick else FULL
    rows = simulate(devices, settings.rng(), settings.show_progress)
    folder = settings.folder(NAME)
    return [plot(rows, folder / f"{NAME}.png"), *table(rows, devices).write(folder, NAME)]
