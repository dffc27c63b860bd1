"""Numeric telemetry: percentiles and the mean of lognormal latencies under LDP.

Latencies drawn lognormal with median 120 ms and p99 1.2 s (σ = ln 10 / z₀.₉₉ ≈ 0.99), as
a page's load times might be. Four ways to collect them, each at ε = 1, 2 and 4:

- ``sw``: the numeric task's Square Wave, its default buckets on a log scale over
  [5 ms, 20 s], answered as the collector answers (a log-spline fit, bootstrap SEs);
- ``grr``: k-ary randomized response over 64 of the same log buckets, its unbiased
  frequencies clipped at 0 and renormalised (the "OUE/GRR over buckets" baseline);
- ``1bit``: the numeric task's one-bit mean, on a linear scale over [0, 5 s];
- ``piecewise``: the Piecewise Mechanism (Wang et al., ICDE 2019) for the mean, on the
  same linear scale (implemented here only, for comparison: a continuous output).

Reported: the mean over seeds of |relative error| of p50, p95, p99 and the mean, beside
the issue's targets at n = 10^5, ε = 2 (p50 ≤ 1 %, p95 ≤ 3 %, p99 ≤ 7 %, mean ≤ 2.5 %),
and the 1-bit and Piecewise means' closed-form standard errors. The full run adds
n = 10^6 at ε = 2 for Square Wave.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ldp_telemetry.shared import GeneralizedRandomizedResponse
from ldp_telemetry.shared.mechanisms.numeric import estimate as est
from ldp_telemetry.shared.mechanisms.numeric.mechanism import OneBitMean, SquareWave
from ldp_telemetry.shared.mechanisms.numeric.params import NumericParams
from simulations.common import plotting
from simulations.common.settings import RunSettings, progress
from simulations.common.tables import Column, Table

NAME = "numeric"
SUMMARY = (
    "lognormal latencies (median 120 ms, p99 1.2 s): p50/p95/p99/mean errors of Square Wave "
    "+ its log-spline fit, GRR over buckets, the 1-bit mean and Piecewise, at eps 1, 2, 4"
)
MEDIAN_MS, SIGMA = 120.0, math.log(10) / 2.3263478740408408
LOG_RANGE, LINEAR_RANGE = (5.0, 20_000.0), (0.0, 5_000.0)
EPSILONS = (1.0, 2.0, 4.0)
STATISTICS = ("p50", "p95", "p99", "mean")
TARGETS = {"p50": 0.01, "p95": 0.03, "p99": 0.07, "mean": 0.025}  # n = 10^5, eps = 2


@dataclass(frozen=True)
class Sizes:
    """Devices per population, populations (seeds) per cell, and the large-n check."""

    devices: int
    seeds: int
    large: int | None


QUICK, FULL = Sizes(devices=20_000, seeds=2, large=None), Sizes(100_000, 10, 1_000_000)


def latencies(n: int, rng: np.random.Generator) -> np.ndarray:
    """Return n lognormal latencies in ms."""
    return rng.lognormal(math.log(MEDIAN_MS), SIGMA, n)


def truth(values: np.ndarray) -> dict[str, float]:
    """Return the population's own statistics."""
    return {
        "p50": float(np.percentile(values, 50)),
        "p95": float(np.percentile(values, 95)),
        "p99": float(np.percentile(values, 99)),
        "mean": float(values.mean()),
    }


def square_wave(values: np.ndarray, epsilon: float, rng: np.random.Generator) -> dict[str, float]:
    """Return the statistics the collector answers from Square Wave (the task's defaults)."""
    params = NumericParams(epsilon=epsilon, lo=LOG_RANGE[0], hi=LOG_RANGE[1], scale="log")
    params.validate()
    sw = params.build()
    sums = sw.new_sums()
    sums.add_many(sw.privatize_many(values, rng))
    answer = sw.estimate(sums, list(STATISTICS))
    return {
        str(name): float(value) for name, value in zip(answer.values, answer.estimate, strict=True)
    }


def grr_buckets(values: np.ndarray, epsilon: float, rng: np.random.Generator) -> dict[str, float]:
    """Return the statistics of GRR over 64 log buckets (frequencies clipped, renormalised)."""
    grid = SquareWave(epsilon=epsilon, lo=LOG_RANGE[0], hi=LOG_RANGE[1], buckets=64, scale="log")
    grr = GeneralizedRandomizedResponse(epsilon=epsilon, domain=[str(i) for i in range(64)])
    truth_index = grid.buckets_of(values)
    reports = grr._from_words(truth_index, rng.integers(0, 2**32, len(values)))
    sums = grr.new_sums()
    sums.add_many(reports)
    frequencies = np.clip(grr.estimate(sums).estimate, 0, None)
    distribution = frequencies / frequencies.sum()
    return dict(est.statistics(distribution, STATISTICS, len(values), grid.to_value))


def one_bit(values: np.ndarray, epsilon: float, rng: np.random.Generator) -> tuple[float, float]:
    """Return the one-bit mean and its closed-form standard error."""
    bit = OneBitMean(
        epsilon=epsilon, lo=LINEAR_RANGE[0], hi=LINEAR_RANGE[1], buckets=1024, scale="linear"
    )
    sums = bit.new_sums()
    sums.add_many(bit.privatize_many(values, rng))
    answer = bit.estimate(sums)
    return float(answer.estimate[0]), float(answer.std_error[0])


def piecewise(values: np.ndarray, epsilon: float, rng: np.random.Generator) -> tuple[float, float]:
    """Return the Piecewise Mechanism's mean and its closed-form standard error."""
    low, high = LINEAR_RANGE
    t = 2 * (np.clip(values, low, high) - low) / (high - low) - 1  # in [-1, 1]
    half = math.exp(epsilon / 2)
    c = (half + 1) / (half - 1)
    left = (c + 1) / 2 * t - (c - 1) / 2
    right = left + c - 1
    inside = rng.random(len(t)) < half / (half + 1)
    centre = left + rng.random(len(t)) * (right - left)
    # outside: uniform over [-c, left) U (right, c], of total length c + 1
    u = rng.random(len(t)) * (c + 1)
    below = left + c
    outside = np.where(u < below, -c + u, right + (u - below))
    reports = np.where(inside, centre, outside)
    mean_t = float(reports.mean())
    variance = np.mean(t**2 / (half - 1) + (half + 3) / (3 * (half - 1) ** 2)) / len(t)
    scale = (high - low) / 2
    return low + (mean_t + 1) * scale, math.sqrt(float(variance)) * scale


def compute(sizes: Sizes, rng: np.random.Generator, show: bool) -> list[dict[str, object]]:
    """Return one row per (method, epsilon, n): mean |relative error| of each statistic."""
    cells = [(eps, sizes.devices) for eps in EPSILONS]
    if sizes.large:
        cells.append((2.0, sizes.large))
    rows = []
    for epsilon, n in progress(cells, "numeric cells", show):
        errors: dict[str, dict[str, list[float]]] = {
            m: {s: [] for s in STATISTICS} for m in ("sw", "grr", "1bit", "piecewise")
        }
        standard: dict[str, list[float]] = {"1bit": [], "piecewise": []}
        for _ in range(sizes.seeds):
            values = latencies(n, rng)
            real = truth(values)
            methods = {"sw": square_wave(values, epsilon, rng)}
            if n == sizes.devices:
                methods["grr"] = grr_buckets(values, epsilon, rng)
                for name, mean_of in (("1bit", one_bit), ("piecewise", piecewise)):
                    mean, error = mean_of(values, epsilon, rng)
                    methods[name] = {"mean": mean}
                    standard[name].append(error / real["mean"])
            for method, found in methods.items():
                for stat, value in found.items():
                    errors[method][stat].append(abs(value / real[stat] - 1))
        for method, by_stat in errors.items():
            if not any(by_stat.values()):
                continue
            row: dict[str, object] = {"method": method, "epsilon": epsilon, "n": n}
            for stat in STATISTICS:
                row[stat] = float(np.mean(by_stat[stat])) if by_stat[stat] else None
            row["theory_se_mean"] = float(np.mean(standard[method])) if method in standard else None
            rows.append(row)
    return rows


def table(rows: list[dict[str, object]], sizes: Sizes) -> Table:
    """Return the errors beside the targets."""
    percent = "{:.2%}"
    return Table(
        "Numeric statistics of lognormal latencies: mean |relative error| over "
        f"{sizes.seeds} populations",
        [
            Column("method", "method"),
            Column("epsilon", "ε", "{:g}"),
            Column("n", "n", "{:,}"),
            *(Column(stat, stat, percent) for stat in STATISTICS),
            Column("theory_se_mean", "mean: closed-form SE", percent),
        ],
        rows,
        notes=(
            "Targets at n = 10^5, ε = 2: p50 ≤ 1 %, p95 ≤ 3 %, p99 ≤ 7 %, mean ≤ 2.5 %. "
            "sw and grr: log buckets over [5 ms, 20 s]; 1bit and piecewise: linear over "
            "[0, 5 s], mean only; their closed-form SE is relative to the true mean."
        ),
    )


def _height(error: object) -> float:
    """Return a relative error as a bar's height (0 where the method gives none)."""
    return float(error) if isinstance(error, (int, float)) else 0.0


def plot(rows: list[dict[str, object]], sizes: Sizes, path: Path) -> Path:
    """Bar chart: each statistic's error per method at each epsilon (n = the base size)."""
    fig, axes = plotting.figure(panels=len(EPSILONS), width=4.6, height=4.0)
    methods = ("sw", "grr", "1bit", "piecewise")
    for ax, epsilon in zip(axes, EPSILONS, strict=True):
        for offset, method in enumerate(methods):
            found = [
                r
                for r in rows
                if r["method"] == method and r["epsilon"] == epsilon and r["n"] == sizes.devices
            ]
            if not found:
                continue
            heights = [_height(found[0][s]) for s in STATISTICS]
            xs = np.arange(len(STATISTICS)) + (offset - 1.5) * 0.2
            ax.bar(xs, np.array(heights) * 100, width=0.2, label=method)
        if epsilon == 2.0:
            ax.scatter(
                np.arange(len(STATISTICS)),
                [TARGETS[s] * 100 for s in STATISTICS],
                marker="_",
                s=400,
                color="black",
                label="target (n = 10^5)",
            )
        ax.set_xticks(np.arange(len(STATISTICS)), STATISTICS)
        ax.set_yscale("log")
        ax.set_title(f"ε = {epsilon:g}, n = {sizes.devices:,}")
        ax.set_ylabel("mean |relative error| (%)")
    axes[0].legend(fontsize=8)
    return plotting.save(fig, path)


def run(settings: RunSettings) -> list[Path]:
    """Compute, plot and tabulate; return the files written."""
    sizes = QUICK if settings.quick else FULL
    rows = compute(sizes, settings.rng(), settings.show_progress)
    folder = settings.folder(NAME)
    return [plot(rows, sizes, folder / f"{NAME}.png"), *table(rows, sizes).write(folder, NAME)]
