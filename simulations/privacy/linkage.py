"""What a device's report stream reveals besides its ε: linking its reports, seeing it change.

k = 100 values (Zipf), ε∞ = 2, ε₁ = 1, n devices, one report per device per day, no device ids
(what a collector behind a shuffler, or one that drops ids, sees). Two attackers who know the
mechanism and hold W = 30 days of one device's reports:

- **linking**: on day W + 1 the attacker sees every device's report, unlabelled, and names the
  one it thinks is the device's: the reports that agree with the device's history (plain and
  RAPPOR: the index its history shows most often; LOLOHA: the same row and that index), one of
  them at random. Accuracy = the chance it names the right one (chance alone: 1/n).
- **change detection**: half the devices move to another value after day W, half do not; the
  attacker sees W reports before and W after and says "changed" when the most frequent index
  (LOLOHA: of the same row) differs. Balanced accuracy = (hits + correct rejections)/2 (chance:
  50 %). Memoization shows *that* the permanent response changed, however small ε₁ is; LOLOHA
  only when the value's bucket and its permanent response change.

Both are simple attackers, lower bounds on the best one. Each variant also gives one day's
estimation error (RMSE of the shares of 100 values over ``accuracy_devices`` devices): LOLOHA's
seed family F trades linkage (about n/(F·g) devices share a row and a bucket) against accuracy:
below F(g − 1) + 1 < k rows no estimator is unbiased (OLH's answers, with the family's collision
bias), just above it the exact estimator's variance is large.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ldp_telemetry.shared import GeneralizedRandomizedResponse
from ldp_telemetry.shared.mechanisms.lifetime.loloha import LocalHashingLongitudinal
from ldp_telemetry.shared.mechanisms.lifetime.spec import MAX_SEEDS, LocalHashingSpec
from ldp_telemetry.shared.mechanisms.longitudinal import Longitudinal, LongitudinalSpec
from ldp_telemetry.shared.mechanisms.olh import HashedBatch
from simulations.common.settings import RunSettings
from simulations.common.tables import Column, Table

NAME = "linkage"
SUMMARY = (
    "an attacker linking one device's daily reports and detecting a change of its value, "
    "per longitudinal variant (plain, RAPPOR, LOLOHA with 16 seeds to 65,536)"
)
K, EPSILON_INF, EPSILON_1, HISTORY = 100, 2.0, 1.0, 30
DOMAIN = [f"v{i}" for i in range(K)]
# (label, kind, g, seeds); 149 and 50 are the default families for k = 100 at g = 2 and 4.
VARIANTS: tuple[tuple[str, str, Any, int], ...] = (
    ("plain", "plain", None, 0),
    ("rappor", "rappor", None, 0),
    ("bilolha, 16 seeds", "loloha", 2, 16),
    ("bilolha, 149 seeds (default)", "loloha", 2, 149),
    ("bilolha, 256 seeds", "loloha", 2, 256),
    ("bilolha, 65,536 seeds", "loloha", 2, MAX_SEEDS),
    ("ololoha, 16 seeds", "loloha", "optimal", 16),
    ("ololoha, 34 seeds", "loloha", "optimal", 34),
    ("ololoha, 50 seeds (default)", "loloha", "optimal", 50),
    ("ololoha, 256 seeds", "loloha", "optimal", 256),
)


@dataclass(frozen=True)
class Sizes:
    """Devices attacked (each against the others) and devices of the accuracy column."""

    devices: int
    accuracy_devices: int
    repeats: int


QUICK, FULL = Sizes(400, 20_000, 3), Sizes(2_000, 200_000, 10)


class Stream:
    """One variant's devices: each day's reports of their current values."""

    def __init__(self, kind: str, g: Any, seeds: int, n: int, rng: np.random.Generator) -> None:
        self.kind, self.rng, self.n = kind, rng, n
        domain = GeneralizedRandomizedResponse(epsilon=EPSILON_INF, domain=DOMAIN)
        if kind == "plain":
            self.mechanism: Any = GeneralizedRandomizedResponse(epsilon=EPSILON_1, domain=DOMAIN)
        elif kind == "rappor":
            layers = LongitudinalSpec(EPSILON_INF, epsilon_1=EPSILON_1)
            self.mechanism = Longitudinal(domain, layers, "sim")
            self.permanent = np.stack(
                [self.mechanism.permanent.privatize_many([v] * n, rng) for v in DOMAIN], 1
            )
        else:
            seed = int(rng.integers(0, 2**32))
            spec = LocalHashingSpec(EPSILON_INF, EPSILON_1, g=g, seeds=seeds, hash_seed=seed)
            self.mechanism = LocalHashingLongitudinal(domain, spec, "sim")
            self.rows = rng.integers(0, seeds, n)
            self.words = rng.integers(0, 2**32, (n, self.mechanism.g), dtype=np.uint64)

    def day(self, values: np.ndarray) -> np.ndarray:
        """Return each device's report of its value as (row, index) (row 0 unless LOLOHA)."""
        m = self.mechanism
        if self.kind == "plain":
            index = m.privatize_many([DOMAIN[v] for v in values], self.rng)
            return np.stack([np.zeros(self.n, dtype=np.int64), index], 1)
        if self.kind == "rappor":
            prr = self.permanent[np.arange(self.n), values]
            index = m.permanent.reflip_many(prr, m.threshold, self.rng)
            return np.stack([np.zeros(self.n, dtype=np.int64), index], 1)
        channel: Any = m.permanent
        buckets = channel.hashes.buckets(channel.keys(DOMAIN)[values], self.rows)
        words = self.words[np.arange(self.n), buckets].astype(np.int64)
        names = [DOMAIN[v] for v in values]
        batch = m.reports_of(names, self.rows, self.rng, permanent_words=words)
        return np.stack([batch.rows, batch.index], 1)


def _modes(history: np.ndarray) -> np.ndarray:
    """Return each device's most frequent index over its days (days × devices)."""
    top = int(history.max()) + 1
    counts = np.zeros((history.shape[1], top), dtype=np.int64)
    np.add.at(counts, (np.tile(np.arange(history.shape[1]), history.shape[0]), history.ravel()), 1)
    return np.asarray(counts.argmax(axis=1))


def linking(stream: Stream, values: np.ndarray) -> float:
    """Return the linking attacker's accuracy (see the module's docstring)."""
    history = np.stack([stream.day(values) for _ in range(HISTORY)])  # days × n × 2
    expected = _modes(history[:, :, 1])
    rows = history[0, :, 0]
    batch = stream.day(values)
    match = (batch[None, :, 0] == rows[:, None]) & (batch[None, :, 1] == expected[:, None])
    matches = match.sum(axis=1)
    own = match[np.arange(stream.n), np.arange(stream.n)]
    picked = np.where(matches > 0, own / np.maximum(matches, 1), 1.0 / stream.n)
    return float(picked.mean())


def change_detection(stream: Stream, values: np.ndarray, rng: np.random.Generator) -> float:
    """Return the change attacker's balanced accuracy over devices half of which change."""
    changed = rng.random(stream.n) < 0.5
    moved = (values + rng.integers(1, K, stream.n)) % K
    after = np.where(changed, moved, values)
    before_modes = _modes(np.stack([stream.day(values)[:, 1] for _ in range(HISTORY)]))
    after_modes = _modes(np.stack([stream.day(after)[:, 1] for _ in range(HISTORY)]))
    said = before_modes != after_modes
    return float((said[changed].mean() + (~said[~changed]).mean()) / 2)


def daily_error(kind: str, g: Any, seeds: int, sizes: Sizes, rng: np.random.Generator) -> float:
    """Return the RMSE of one day's shares over ``sizes.accuracy_devices`` new devices."""
    zipf = 1.0 / np.arange(1, K + 1)
    errors = []
    for _ in range(sizes.repeats):
        values = rng.choice(K, sizes.accuracy_devices, p=zipf / zipf.sum())
        stream = Stream(kind, g, seeds, sizes.accuracy_devices, rng)
        sums = stream.mechanism.new_sums()
        reports = stream.day(values)
        if kind == "loloha":
            sums.add_many(HashedBatch(reports[:, 0], reports[:, 1]))
        else:
            sums.add_many(reports[:, 1])
        estimate = np.asarray(stream.mechanism.estimate(sums).estimate) / len(values)
        truth = np.bincount(values, minlength=K) / len(values)
        errors.append(float(np.sqrt(np.mean((estimate - truth) ** 2))))
    return float(np.mean(errors))


def _estimator(stream: Stream) -> str:
    """Return which estimator answers: LOLOHA's exact solve, or OLH's (too few rows)."""
    if stream.kind != "loloha":
        return "grr"
    return "exact" if stream.mechanism.family.exact else "olh"


def compute(sizes: Sizes, rng: np.random.Generator) -> list[dict[str, Any]]:
    """Return one row per variant: its ε, the two attackers' accuracies and its error."""
    zipf = 1.0 / np.arange(1, K + 1)
    values = rng.choice(K, sizes.devices, p=zipf / zipf.sum())
    rows = []
    for label, kind, g, seeds in VARIANTS:
        stream = Stream(kind, g, seeds, sizes.devices, rng)
        m = stream.mechanism
        bound = (
            (m.g if kind == "loloha" else K) * m.effective_epsilon_inf if kind != "plain" else None
        )
        rows.append(
            {
                "variant": label,
                "epsilon_1": m.effective_epsilon,
                "lifetime": bound if bound is not None else float("inf"),
                "linking": linking(stream, values),
                "chance": 1.0 / sizes.devices,
                "change": change_detection(Stream(kind, g, seeds, sizes.devices, rng), values, rng),
                "error": daily_error(kind, g, seeds, sizes, rng),
                "estimator": _estimator(stream),
            }
        )
    return rows


def table(rows: list[dict[str, Any]], sizes: Sizes) -> Table:
    """Return the rows as a table."""
    notes = (
        f"{sizes.devices:,} devices with Zipf values over k = {K}, ε∞ = {EPSILON_INF:g}, ε₁ = "
        f"{EPSILON_1:g}, {HISTORY} days of history; linking by chance: 1/{sizes.devices:,}. "
        f"Error: one day, {sizes.accuracy_devices:,} devices, mean of {sizes.repeats}."
    )
    return Table(
        "What a report stream reveals: linking a device's reports, detecting a value change",
        [
            Column("variant", "variant"),
            Column("epsilon_1", "ε₁", "{:.3f}"),
            Column("lifetime", "lifetime ε bound", "{:.0f}"),
            Column("linking", "linking accuracy", "{:.1%}"),
            Column("change", "change detected (balanced)", "{:.1%}"),
            Column("error", "one day's RMSE of shares", "{:.4f}"),
            Column("estimator", "estimator"),
        ],
        rows,
        notes=notes,
    )


def run(settings: RunSettings) -> list[Path]:
    """Compute and tabulate; return the files written."""
    sizes = QUICK if settings.quick else FULL
    rows = compute(sizes, settings.rng())
    return table(rows, sizes).write(settings.folder(NAME), NAME)
