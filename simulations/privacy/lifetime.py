"""Lifetime privacy of a year of daily reports: plain reports, RAPPOR's layers and LOLOHA.

k = 100 values, ε∞ = 2, ε₁ = 1, 365 days. The population: a stable majority (70 %, one value
for ever, Zipf-distributed), a churning minority (10 %, a new uniform value every day) and a
drifting part (20 %, the next value every 30 days). Every device records its value once a day
through the device rules of PROTOCOL.md §4 with the SDK's default cap (max_epsilon_inf = 64):

- ``plain``: a fresh grr report at ε₁ every day (no permanent layer: no lifetime bound, and no
  cap applies by default);
- ``rappor``: grr's longitudinal layers (§3.9): a permanent response per value at ε∞;
- ``bilolha`` / ``ololoha``: LOLOHA (§3.13) with g = 2 and the optimal g: a permanent
  response per hashed bucket; ``loloha g=3``: the g the paper's closed form gives here
  (2.79, rounded), with our exactly calibrated ε₁ (``shared/mechanisms/lifetime/spec.py``).

Per variant: each device's lifetime ε (plain: the sum of its reports' ε; the others: the ε∞ of
the permanent responses its ledger drew), its median, 99th percentile and maximum; beside it
what the device *would* spend to keep reporting every day with no cap (the ε∞ of every
distinct value, or bucket, it held): a silenced RAPPOR device stops spending, so the capped
p99 flatters RAPPOR's layers, and both ratios are shown; the share of devices the cap silenced
at least once and of records refused; and the daily estimates' error: the RMSE over the k
values of (estimated − true share), the truth being every device's value that day (a silenced
device's value is missing from the estimate).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ldp_telemetry.shared import GeneralizedRandomizedResponse
from ldp_telemetry.shared.mechanisms.lifetime.loloha import LocalHashingLongitudinal
from ldp_telemetry.shared.mechanisms.lifetime.spec import LocalHashingSpec
from ldp_telemetry.shared.mechanisms.longitudinal import Longitudinal, LongitudinalSpec
from simulations.common import plotting
from simulations.common.settings import RunSettings, progress
from simulations.common.tables import Column, Table

NAME = "lifetime"
SUMMARY = (
    "a year of daily reports whose values change: lifetime ε per device, devices silenced by "
    "the cap and daily error, for plain reports, RAPPOR's layers and LOLOHA (g = 2, optimal g)"
)
K, EPSILON_INF, EPSILON_1, CAP = 100, 2.0, 1.0, 64.0
DOMAIN = [f"v{i}" for i in range(K)]
GROUPS = {"stable": 0.7, "churning": 0.1, "drifting": 0.2}
DRIFT_DAYS = 30
VARIANTS = ("plain", "rappor", "bilolha", "ololoha", "loloha g=3")


@dataclass(frozen=True)
class Sizes:
    """Devices and days simulated."""

    devices: int
    days: int


QUICK, FULL = Sizes(1_000, 60), Sizes(10_000, 365)


def population(sizes: Sizes, rng: np.random.Generator) -> np.ndarray:
    """Return each day's value index per device (days × devices)."""
    n = sizes.devices
    group = rng.choice(len(GROUPS), n, p=list(GROUPS.values()))
    zipf = 1.0 / np.arange(1, K + 1)
    stable = rng.choice(K, n, p=zipf / zipf.sum())
    start = rng.integers(0, 20, n)
    days = np.arange(sizes.days)[:, None]
    churning = rng.integers(0, K, (sizes.days, n))
    drifting = (start[None, :] + days // DRIFT_DAYS) % K
    return np.where(group == 0, stable[None, :], np.where(group == 1, churning, drifting))


def mechanism(variant: str, seed: int) -> Any:
    """Return the variant's mechanism (longitudinal ones at ε∞ = 2, every one at ε₁ = 1)."""
    if variant == "plain":
        return GeneralizedRandomizedResponse(epsilon=EPSILON_1, domain=DOMAIN)
    if variant == "rappor":
        permanent = GeneralizedRandomizedResponse(epsilon=EPSILON_INF, domain=DOMAIN)
        return Longitudinal(permanent, LongitudinalSpec(EPSILON_INF, epsilon_1=EPSILON_1), "sim")
    g: dict[str, int | str] = {"bilolha": 2, "ololoha": "optimal", "loloha g=3": 3}
    layer = {"variant": "loloha", "epsilon_inf": EPSILON_INF, "epsilon_1": EPSILON_1}
    option = {**layer, "g": g[variant], "hash_seed": seed}  # seeds left out: the default
    spec = LocalHashingSpec.parse(option, domain_size=K)
    domain = GeneralizedRandomizedResponse(epsilon=EPSILON_INF, domain=DOMAIN)
    return LocalHashingLongitudinal(domain, spec, "sim")


class Ledger:
    """Each device's permanent responses drawn (per key) and its lifetime ε∞, capped."""

    def __init__(self, devices: int, keys: int, epsilon_inf: float) -> None:
        self.drawn = np.zeros((devices, keys), dtype=bool)
        self.held = np.zeros((devices, keys), dtype=bool)  # every key held, drawn or refused
        self.spent = np.zeros(devices)
        self.epsilon_inf = epsilon_inf

    def uncapped(self) -> np.ndarray:
        """Return what each device would have spent with no cap: ε∞ per distinct key held."""
        return self.held.sum(axis=1) * self.epsilon_inf

    def admit(self, keys: np.ndarray) -> np.ndarray:
        """Return which devices may report a value with these keys, charging new ones."""
        devices = np.arange(len(keys))
        self.held[devices, keys] = True
        known = self.drawn[devices, keys]
        fits = self.spent + self.epsilon_inf <= CAP + 1e-9
        new = ~known & fits
        self.drawn[devices[new], keys[new]] = True
        self.spent[new] += self.epsilon_inf
        return known | fits


def simulate(variant: str, values: np.ndarray, rng: np.random.Generator, show: bool) -> dict:
    """Return one variant's lifetime ε per device, silencing and daily errors."""
    days, n = values.shape
    chosen = mechanism(variant, seed=int(rng.integers(0, 2**32)))
    errors, silenced, refused = [], np.zeros(n, dtype=bool), 0
    longitudinal = variant != "plain"
    if variant == "rappor":
        ledger = Ledger(n, K, chosen.effective_epsilon_inf)
        permanent = np.stack([chosen.permanent.privatize_many([v] * n, rng) for v in DOMAIN], 1)
    elif longitudinal:
        ledger = Ledger(n, chosen.g, chosen.effective_epsilon_inf)
        rows = rng.integers(0, chosen.seeds, n)
        words = rng.integers(0, 2**32, (n, chosen.g), dtype=np.uint64).astype(np.int64)
        channel: Any = chosen.permanent
        keys = channel.keys(DOMAIN)
    for day in progress(range(days), f"lifetime {variant}", show):
        today = values[day]
        if variant == "plain":
            batch = chosen.privatize_many([DOMAIN[v] for v in today], rng)
            reporting = np.ones(n, dtype=bool)
        elif variant == "rappor":
            reporting = ledger.admit(today)
            index = permanent[np.arange(n), today][reporting]
            batch = chosen.permanent.reflip_many(index, chosen.threshold, rng)
        else:
            buckets = channel.hashes.buckets(keys[today], rows)
            reporting = ledger.admit(buckets)
            own = words[np.arange(n), buckets][reporting]
            names = [DOMAIN[v] for v in today[reporting]]
            batch = chosen.reports_of(names, rows[reporting], rng, permanent_words=own)
        silenced |= ~reporting
        refused += int((~reporting).sum())
        sums = chosen.new_sums()
        sums.add_many(batch)
        estimate = np.asarray(chosen.estimate(sums).estimate) / max(1, int(reporting.sum()))
        truth = np.bincount(today, minlength=K) / n
        errors.append(float(np.sqrt(np.mean((estimate - truth) ** 2))))
    lifetime = ledger.spent if longitudinal else np.full(n, days * chosen.effective_epsilon)
    uncapped = ledger.uncapped() if longitudinal else lifetime
    return {
        "variant": variant,
        "g": getattr(chosen, "g", None) or "",
        "seeds": getattr(chosen, "seeds", None) or "",
        "epsilon_1": chosen.effective_epsilon,
        "epsilon_inf": chosen.effective_epsilon_inf if longitudinal else float("nan"),
        "median": float(np.median(lifetime)),
        "p99": float(np.quantile(lifetime, 0.99)),
        "max": float(lifetime.max()),
        "uncapped_p99": float(np.quantile(uncapped, 0.99)),
        "silenced": float(silenced.mean()),
        "refused": refused / (days * n),
        "error": float(np.mean(errors)),
        "daily": errors,
    }


def compute(sizes: Sizes, rng: np.random.Generator, show: bool) -> list[dict[str, Any]]:
    """Return every variant's row (the same population for all)."""
    values = population(sizes, rng)
    rows = [simulate(variant, values, rng, show) for variant in VARIANTS]
    rappor = next(row for row in rows if row["variant"] == "rappor")
    for row in rows:
        row["error_vs_rappor"] = row["error"] / rappor["error"]
        row["p99_vs_rappor"] = rappor["p99"] / row["p99"]
        row["uncapped_vs_rappor"] = rappor["uncapped_p99"] / row["uncapped_p99"]
    return rows


def plot(rows: list[dict[str, Any]], path: Path) -> Path:
    """Draw each variant's daily error over the year."""
    fig, (axes,) = plotting.figure(width=7.5, height=4.2)
    for row in rows:
        axes.plot(row["daily"], label=f"{row['variant']} (lifetime ε p99 {row['p99']:.0f})")
    axes.set_xlabel("day")
    axes.set_ylabel("RMSE of the daily shares")
    axes.set_title(f"k = {K}, ε∞ = {EPSILON_INF:g}, ε₁ = {EPSILON_1:g}: daily error")
    axes.legend(fontsize=8)
    return plotting.save(fig, path)


def table(rows: list[dict[str, Any]], sizes: Sizes) -> Table:
    """Return the rows as a table."""
    notes = (
        f"{sizes.devices:,} devices, {sizes.days} days, k = {K}, ε∞ = {EPSILON_INF:g}, "
        f"ε₁ = {EPSILON_1:g}, cap max_epsilon_inf = {CAP:g}; LOLOHA with its default seeds "
        "(⌈1.5·(k − 1)/(g − 1)⌉) and the exact estimator. Population: 70 % stable, 10 % a new "
        "value daily, 20 % the next value every 30 days. Uncapped: what "
        "a device would spend to keep reporting daily (ε∞ per distinct value or bucket held)."
    )
    return Table(
        "A year of daily reports: lifetime ε per device, silencing and daily error",
        [
            Column("variant", "variant"),
            Column("g", "g"),
            Column("seeds", "seeds"),
            Column("epsilon_1", "ε₁", "{:.3f}"),
            Column("median", "lifetime ε median", "{:.1f}"),
            Column("p99", "p99", "{:.1f}"),
            Column("max", "max", "{:.1f}"),
            Column("p99_vs_rappor", "RAPPOR p99 / p99", "{:.1f}"),
            Column("uncapped_p99", "uncapped p99", "{:.1f}"),
            Column("uncapped_vs_rappor", "RAPPOR uncapped p99 / uncapped p99", "{:.1f}"),
            Column("silenced", "devices silenced", "{:.1%}"),
            Column("refused", "records refused", "{:.1%}"),
            Column("error", "daily RMSE of shares", "{:.4f}"),
            Column("error_vs_rappor", "error / RAPPOR's", "{:.2f}"),
        ],
        rows,
        notes=notes,
    )


def run(settings: RunSettings) -> list[Path]:
    """Compute, plot and tabulate; return the files written."""
    sizes = QUICK if settings.quick else FULL
    rows = compute(sizes, settings.rng(), settings.show_progress)
    folder = settings.folder(NAME)
    return [plot(rows, folder / f"{NAME}.png"), *table(rows, sizes).write(folder, NAME)]
