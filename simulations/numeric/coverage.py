"""Do a numeric task's intervals cover? Mean z, SE ÷ empirical SD and 95% coverage.

For each setting (ε, range, scale, buckets, n) and population with known truth (uniform,
lognormal on a log scale, bimodal, a point mass, 5% clipped at each end), many
populations are drawn, privatized and answered by the collector's own estimator
(``mechanism.estimate``); each statistic's answer is compared with the population's own
value. Reported per statistic: the mean z = (estimate − truth) / SE, SE ÷ the empirical
SD of the estimates, the share of 95% intervals that hold the truth, the share of answers
flagged ``reliable: false``, and the coverage among the answers left reliable. Targets
(issue 24): coverage 95 ± 3 % (or flagged unreliable), mean |z| < 0.3, SE ÷ SD in
[0.9, 1.15].

``answer`` (one population → estimate, SE, interval, reliability per statistic) and
``truth`` are pure functions the general coverage experiment can call.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ldp_telemetry.shared.mechanisms.numeric.mechanism import NumericBase
from ldp_telemetry.shared.mechanisms.numeric.params import NumericParams
from simulations.common.settings import RunSettings, progress
from simulations.common.tables import Column, Table

NAME = "numeric_coverage"
SUMMARY = (
    "numeric intervals: mean z, SE / empirical SD and 95% coverage of mean, percentiles "
    "and clipped shares, over uniform, lognormal, bimodal, point-mass and clipped populations"
)
RUNS, QUICK_RUNS = 60, 20  # populations per cell
STATISTICS = ("mean", "p50", "p90", "p99", "first_bucket", "last_bucket")


@dataclass(frozen=True)
class Setting:
    """One task configuration and the devices per population."""

    name: str
    epsilon: float
    lo: float
    hi: float
    scale: str
    buckets: int | None
    n: int

    def mechanism(self) -> NumericBase:
        """Return the numeric task's mechanism for this setting (its default buckets if None)."""
        params = NumericParams(
            epsilon=self.epsilon, lo=self.lo, hi=self.hi, buckets=self.buckets, scale=self.scale
        )
        params.validate()
        mechanism = params.build()
        assert isinstance(mechanism, NumericBase)  # no longitudinal option here
        return mechanism


@dataclass(frozen=True)
class Row:
    """One statistic's answer: estimate, standard error, interval and reliability."""

    estimate: float
    std_error: float
    ci_low: float
    ci_high: float
    reliable: bool


Population = Callable[[int, np.random.Generator, Setting], np.ndarray]


def uniform(n: int, rng: np.random.Generator, s: Setting) -> np.ndarray:
    """Return n values uniform over the range (in the task's scale)."""
    return _from_unit(rng.random(n), s)


def lognormal(n: int, rng: np.random.Generator, s: Setting) -> np.ndarray:
    """Return lognormal latencies: median 120, p99 1,200 (σ = ln 10 / z₀.₉₉)."""
    return rng.lognormal(math.log(120.0), math.log(10) / 2.3263478740408408, n)


def bimodal(n: int, rng: np.random.Generator, s: Setting) -> np.ndarray:
    """Return two normal bumps at 25% and 70% of the range (sd 4%), 60/40."""
    first = rng.random(n) < 0.6
    unit = np.where(first, rng.normal(0.25, 0.04, n), rng.normal(0.70, 0.04, n))
    return _from_unit(np.clip(unit, 0.0, 1.0), s)


def point_mass(n: int, rng: np.random.Generator, s: Setting) -> np.ndarray:
    """Return n copies of the range's midpoint (in the task's scale)."""
    return _from_unit(np.full(n, 0.5), s)


def clipped(n: int, rng: np.random.Generator, s: Setting) -> np.ndarray:
    """Return values uniform over the range, but 5% below lo and 5% above hi."""
    side = rng.random(n)
    inside = _from_unit(rng.random(n), s)
    return np.where(side < 0.05, s.lo - (s.hi - s.lo), np.where(side > 0.95, s.hi * 2, inside))


def _from_unit(unit: np.ndarray, s: Setting) -> np.ndarray:
    if s.scale == "log":
        return np.exp(math.log(s.lo) + unit * (math.log(s.hi) - math.log(s.lo)))
    return s.lo + unit * (s.hi - s.lo)


POPULATIONS: dict[str, Population] = {
    "uniform": uniform,
    "lognormal": lognormal,
    "bimodal": bimodal,
    "point mass": point_mass,
    "5% clipped": clipped,
}
SETTINGS = (
    Setting("linear ε=1, 32 buckets", 1.0, 0.0, 100.0, "linear", 32, 30_000),
    Setting("linear ε=1, default buckets", 1.0, 0.0, 100.0, "linear", None, 30_000),
    Setting("log ε=2, default buckets", 2.0, 5.0, 20_000.0, "log", None, 100_000),
)


def truth(values: np.ndarray, names: Sequence[str], mechanism: NumericBase) -> dict[str, float]:
    """Return the population's own value of each statistic (values clipped to the range).

    ``first_bucket`` / ``last_bucket``: the share of values in the end bucket, those
    clipped into it included.
    """
    kept = np.clip(values, mechanism.lo, mechanism.hi)
    buckets = mechanism.buckets_of(values)
    found: dict[str, float] = {}
    for name in names:
        if name == "mean":
            found[name] = float(kept.mean())
        elif name == "first_bucket":
            found[name] = float(np.mean(buckets == 0))
        elif name == "last_bucket":
            found[name] = float(np.mean(buckets == mechanism.d - 1))
        else:
            found[name] = float(np.percentile(kept, float(name[1:])))
    return found


def answer(
    mechanism: NumericBase, values: np.ndarray, rng: np.random.Generator, names: Sequence[str]
) -> dict[str, Row]:
    """Privatize a population, answer each statistic as the collector does."""
    sums = mechanism.new_sums()
    sums.add_many(mechanism.privatize_many(values, rng))
    result = mechanism.estimate(sums, list(names))
    flags = getattr(result, "reliable", None)  # the one-bit mean's estimates carry no flags
    rows = {}
    for i, name in enumerate(result.values):
        reliable = True if flags is None else bool(flags[i])
        rows[str(name)] = Row(
            float(result.estimate[i]),
            float(result.std_error[i]),
            float(result.ci_low[i]),
            float(result.ci_high[i]),
            reliable,
        )
    return rows


def cell(
    setting: Setting, population: Population, runs: int, rng: np.random.Generator
) -> list[dict[str, Any]]:
    """Return one summary row per statistic over ``runs`` independent populations."""
    mechanism = setting.mechanism()
    found: dict[str, list[tuple[float, Row]]] = {name: [] for name in STATISTICS}
    for _ in range(runs):
        values = population(setting.n, rng, setting)
        real = truth(values, STATISTICS, mechanism)
        for name, row in answer(mechanism, values, rng, STATISTICS).items():
            found[name].append((real[name], row))
    return [summary(name, pairs) for name, pairs in found.items()]


def summary(name: str, pairs: list[tuple[float, Row]]) -> dict[str, Any]:
    """Return mean z, SE ÷ SD, coverage, the unreliable share and coverage among the rest."""
    real = np.array([t for t, _ in pairs])
    est = np.array([r.estimate for _, r in pairs])
    se = np.array([r.std_error for _, r in pairs])
    inside = np.array([r.ci_low <= t <= r.ci_high for t, r in pairs])
    reliable = np.array([r.reliable for _, r in pairs])
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se > 0, (est - real) / se, np.nan)
    spread = float(np.std(est - real, ddof=1))
    return {
        "statistic": name,
        "mean_z": float(np.nanmean(z)) if np.isfinite(z).any() else None,
        "se_over_sd": float(np.mean(se) / spread) if spread > 0 else None,
        "coverage": float(inside.mean()),
        "unreliable": float(1 - reliable.mean()),
        "coverage_reliable": float(inside[reliable].mean()) if reliable.any() else None,
    }


def compute(
    runs: int, rng: np.random.Generator, show: bool, settings: Sequence[Setting] = SETTINGS
) -> list[dict[str, object]]:
    """Return the summary rows of every setting × population that fits its scale."""
    cells = [
        (s, name)
        for s in settings
        for name in POPULATIONS
        if (name == "lognormal") == (s.scale == "log") or name in ("point mass", "5% clipped")
    ]
    rows = []
    for setting, name in progress(cells, "coverage cells", show):
        for row in cell(setting, POPULATIONS[name], runs, rng):
            rows.append({"setting": setting.name, "population": name, **row})
    return rows


def table(rows: list[dict[str, object]], runs: int) -> Table:
    """Return the coverage table."""
    number, percent = "{:+.2f}", "{:.1%}"
    return Table(
        f"Numeric intervals over {runs} populations per cell (95% level)",
        [
            Column("setting", "setting"),
            Column("population", "population"),
            Column("statistic", "statistic"),
            Column("mean_z", "mean z", number),
            Column("se_over_sd", "SE ÷ SD", "{:.2f}"),
            Column("coverage", "coverage", percent),
            Column("unreliable", "flagged unreliable", percent),
            Column("coverage_reliable", "coverage if reliable", percent),
        ],
        rows,
        notes=(
            "Targets: coverage 95 ± 3 % (or flagged unreliable), mean |z| < 0.3, "
            "SE ÷ SD in [0.9, 1.15]. Truth: the population's own statistic, values "
            "clipped to [lo, hi]; first/last bucket: the share of values in it, clipped "
            "ones included."
        ),
    )


def run(settings: RunSettings) -> list[Path]:
    """Compute and tabulate; return the files written."""
    runs = QUICK_RUNS if settings.quick else RUNS
    rows = compute(runs, settings.rng(), settings.show_progress)
    return table(rows, runs).write(settings.folder(NAME), NAME)
