"""Two periods of a longitudinal task: the same devices, the same permanent responses.

Every device holds the same value in both periods and reports it once in each: two fresh
instantaneous responses of one permanent response (RAPPOR's layers, exactly as the SDK draws
them). The two periods' estimates are then positively correlated, and the comparison's
SE = √(SE_a² + SE_b²) (ldp_telemetry.shared.breakdowns.comparison) should be an upper bound
of the difference's true standard deviation: this measures by how much, beside the
Cauchy–Schwarz bound SE_a + SE_b, and what the intervals and Holm's test do with it (the
true difference is 0 for every value).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ldp_telemetry.shared import TaskConfig
from ldp_telemetry.shared.breakdowns.comparison import Side, compare_values
from simulations.common.tables import Column, Table

ALPHA = 0.05
VALUES = [str(i) for i in range(8)]
SHARES = (0.30, 0.20, 0.15, 0.10, 0.10, 0.08, 0.04, 0.03)
LAYER = {"epsilon_inf": 3.0, "flip": 0.1}


@dataclass(frozen=True)
class Row:
    """One kind's periods compared over many runs."""

    kind: str
    n: int
    reps: int
    se_over_sd: float  # the comparison's SE over the empirical SD of the difference
    cauchy_schwarz_over_sd: float
    coverage: float
    fwer_holm: float


def mechanism(kind: str) -> Any:
    """Return the longitudinal mechanism of a kind over ``VALUES``."""
    fields: dict[str, Any] = {"task_id": "sim", "mechanism": kind, "longitudinal": LAYER}
    if kind == "grr":
        fields["domain"] = VALUES
    return TaskConfig(**fields).mechanism_object


def run_one(kind: str, n: int, reps: int, rng: np.random.Generator) -> Row:
    """Return how the comparison of two periods of the same devices behaves."""
    layer = mechanism(kind)
    counts = np.round(np.array(SHARES) * n).astype(int)
    held = [v for v, c in zip(VALUES, counts, strict=True) for _ in range(c)]
    values: list[Any] = [v == "0" for v in held] if kind == "rr" else held
    total = len(values)
    differences, reported, bounds, covered, any_holm = [], [], [], 0, 0
    for _ in range(reps):
        prr = layer.permanent.privatize_many(values, rng)  # drawn once per device
        periods = []
        for _ in range(2):
            sums = layer.new_sums()
            sums.add_many(layer.permanent.reflip_many(prr, layer.threshold, rng))
            periods.append(layer.estimate(sums))
        a, b = ([Side(e / total, s / total) for e, s in zip(p.estimate, p.std_error, strict=True)]
                for p in periods)  # fmt: skip
        rows = compare_values(list(periods[0].values), list(a), list(b), alpha=ALPHA)
        differences.append([row.difference.difference for row in rows])
        reported.append([row.difference.std_error for row in rows])
        bounds.append([(x.std_error + y.std_error) for x, y in zip(a, b, strict=True)])
        covered += sum(row.difference.ci_low <= 0.0 <= row.difference.ci_high for row in rows)
        any_holm += any(row.significant for row in rows)
    sd = np.std(np.array(differences), axis=0, ddof=1)
    return Row(
        kind,
        total,
        reps,
        float(np.mean(np.mean(reported, axis=0) / sd)),
        float(np.mean(np.mean(bounds, axis=0) / sd)),
        covered / (reps * len(differences[0])),
        any_holm / reps,
    )


def compute(n: int, reps: int, seed: int) -> list[Row]:
    """Run rr and grr, each from its own stream of the seed."""
    streams = np.random.SeedSequence([seed, 2]).spawn(2)
    return [
        run_one(kind, n, reps, np.random.default_rng(stream))
        for kind, stream in zip(("rr", "grr"), streams, strict=True)
    ]


def table(rows: list[Row]) -> Table:
    """Return the table of the periods' comparisons."""
    columns = [
        Column("kind", "kind"),
        Column("n", "devices", "{:,}"),
        Column("reps", "runs", "{:,}"),
        Column("se_over_sd", "SE used / true SD", "{:.2f}"),
        Column("cauchy_schwarz_over_sd", "SE_a + SE_b / true SD", "{:.2f}"),
        Column("coverage", "95% interval coverage", "{:.3f}"),
        Column("fwer_holm", "FWER, Holm", "{:.3f}"),
    ]
    return Table(
        "Two periods of a longitudinal task, the same devices and values",
        columns,
        [vars(row) for row in rows],
        notes=f"longitudinal {LAYER}; shares {list(SHARES)} (rr: value 0 or not); the true "
        "difference is 0. SD: the empirical standard deviation of the difference over the runs.",
    )
