"""Mid-size domains: every frequency kind's variance against its closed form, the crossover
map, and subset selection's gain at the crossover (docs/design.md, Mid-size domains).

For each (ε, d) n reports are spread evenly over d values and each kind the auto choice compares
(grr, ss, oue, olh, cms, hcms; :mod:`ldp_telemetry.shared.mechanisms.auto`) is built from its
planner's parameters, with ``SIM_K`` hash rows for the hashing kinds (their closed form's collision
term uses the same k). grr, ss, oue and olh privatize the population with their own
``privatize_many`` (seeded); cms and hcms use the exact sum samplers of
:mod:`simulations.common.sampler`; the hashing kinds draw a fresh hash family per repetition, so
their collisions average as in the closed form. The squared errors of every value's count over the
repetitions give the simulated variance, drawn beside the closed form. SS's gain over min(GRR, OUE)
is reported from both at the crossover points d ≈ 3e^ε + 2: Wang et al. 2016 / Ye–Barg 2018 put it
at 22% (ε = 1, d = 10), 19% (2, 24) and 17% (4, 166).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ldp_telemetry.shared.mechanisms.auto import AUTO_KINDS, compare
from ldp_telemetry.shared.mechanisms.base import Plan
from ldp_telemetry.shared.mechanisms.registry import KINDS, plan
from ldp_telemetry.shared.mechanisms.sketches.base import plan_sketch
from simulations.common import plotting
from simulations.common.population import Population, uniform_population
from simulations.common.settings import RunSettings, progress
from simulations.common.tables import Column, Table
from simulations.frequency.sketch_accuracy import MECHANISMS as SKETCH_SAMPLERS

NAME = "domain_kinds"
SUMMARY = (
    "grr, ss, oue, olh, cms, hcms: simulated variance beside the closed form at several "
    "(d, epsilon), the crossover map of the best kind, and SS's gain over min(GRR, OUE)"
)
CROSSOVERS = ((1.0, 10), (2.0, 24), (4.0, 166))
CHUNK_CELLS = 1 << 22  # reports × d privatized at once
SIM_K = 64  # hash rows of olh, cms, hcms here (the planner's 2048 only shrinks collisions)


@dataclass(frozen=True)
class Sizes:
    """The (ε, d) grid, reports per run, squared errors wanted per cell, the map's grid."""

    epsilons: tuple[float, ...]
    domains: tuple[int, ...]
    n: int
    samples: int
    hashing_reps: int  # at most this many repetitions of olh, cms, hcms (slow to sample)
    map_epsilons: int
    map_domains: int


QUICK = Sizes((1.0,), (10,), n=2_000, samples=200, hashing_reps=20, map_epsilons=4, map_domains=6)
FULL = Sizes(
    (1.0, 2.0, 4.0),
    (4, 10, 24, 64, 166, 512),
    n=10_000,
    samples=4_000,
    hashing_reps=150,
    map_epsilons=36,
    map_domains=48,
)


@dataclass(frozen=True)
class Cell:
    """One kind at one (ε, d): the variance of a count, closed form and simulated."""

    epsilon: float
    d: int
    mechanism: str
    theory: float
    simulated: float
    samples: int


def params(kind: str, epsilon: float, population: Population, seed: int) -> Any:
    """Return the kind's parameters: the planner's, over the population (k = SIM_K rows)."""
    fields = planner_fields(kind, epsilon, len(population.values))
    if "domain" in fields:
        fields["domain"] = list(population.values)
    else:
        fields.update(hash_seed=seed, k=SIM_K)
    return KINDS[kind].from_fields(fields)


@functools.cache
def planned(epsilon: float, d: int, n: int) -> dict[str, Plan]:
    """Return every kind's plan at (ε, d) for n reports (computed once per cell)."""
    return dict(plan(epsilon, d, n))


def planner_fields(kind: str, epsilon: float, d: int) -> dict[str, Any]:
    """Return a copy of the planner's fields of a kind at (ε, d)."""
    return dict(planned(epsilon, d, 1)[kind].fields)


def closed_form(kind: str, epsilon: float, population: Population) -> float:
    """Return the closed-form variance of a count (collisions averaged for the hashing kinds)."""
    kind_params = params(kind, epsilon, population, 0)
    d, n = len(population.values), population.n
    if "hash_seed" in kind_params.fields():
        return plan_sketch(kind_params, d, n).std_error ** 2
    return planned(epsilon, d, n)[kind].std_error ** 2


def sums_of(kind: str, mechanism: Any, population: Population, rng: np.random.Generator) -> Any:
    """Return the integer sums of the population's reports (privatized or sampled exactly)."""
    if kind in SKETCH_SAMPLERS:
        return SKETCH_SAMPLERS[kind].sample(mechanism, population.values, population.counts, rng)
    values = [
        v for v, c in zip(population.values, population.counts, strict=True) for _ in range(int(c))
    ]
    sums = mechanism.new_sums()
    step = max(1, CHUNK_CELLS // len(population.values))
    for start in range(0, len(values), step):
        sums.add_many(mechanism.privatize_many(values[start : start + step], rng))
    return sums


def measure_cell(kind: str, epsilon: float, d: int, sizes: Sizes, rng: np.random.Generator) -> Cell:
    """Return one kind's closed-form and simulated variance of a count at (ε, d)."""
    population = uniform_population(sizes.n, d)
    reps = max(2, math.ceil(sizes.samples / d))
    if "hash_seed" in KINDS[kind].fields():
        reps = min(reps, sizes.hashing_reps)
    squares = []
    for _ in range(reps):
        mechanism = params(kind, epsilon, population, int(rng.integers(0, 2**32))).build()
        sums = sums_of(kind, mechanism, population, rng)
        result = mechanism.estimate(sums, list(population.values))
        squares.append((result.estimate - population.counts) ** 2)
    theory = closed_form(kind, epsilon, population)
    return Cell(epsilon, d, kind, theory, float(np.mean(squares)), reps * d)


def compute(sizes: Sizes, rng: np.random.Generator, show: bool = False) -> list[Cell]:
    """Measure every kind at every (ε, d) of the grid."""
    grid = [(e, d, k) for e in sizes.epsilons for d in sizes.domains for k in AUTO_KINDS]
    return [measure_cell(k, e, d, sizes, rng) for e, d, k in progress(grid, NAME, show)]


def ss_gain(variances: dict[str, float]) -> float:
    """Return 1 − Var(ss)/min(Var(grr), Var(oue))."""
    return 1.0 - variances["ss"] / min(variances["grr"], variances["oue"])


def rare_value_gain(epsilon: float, d: int) -> float:
    """Return SS's gain from docs/design.md's rare-value closed forms (n·Var at f → 0)."""
    e = math.exp(epsilon)
    omega = max(1, math.floor(d / (e + 1) + 0.5))
    p = omega * e / (omega * e + d - omega)
    q = (omega * e * (omega - 1) + (d - omega) * omega) / ((d - 1) * (omega * e + d - omega))
    forms = {"grr": (e + d - 2) / (e - 1) ** 2, "oue": 4 * e / (e - 1) ** 2}
    forms["ss"] = q * (1 - q) / (p - q) ** 2
    return ss_gain(forms)


def gains_table(cells: list[Cell]) -> Table:
    """Return SS's gain at each measured crossover: rare-value, planner and simulated."""
    rows = []
    for epsilon, d in CROSSOVERS:
        mine = {c.mechanism: c for c in cells if c.epsilon == epsilon and c.d == d}
        if not {"grr", "oue", "ss"} <= set(mine):
            continue
        rows.append(
            {
                "epsilon": epsilon,
                "d": d,
                "rare": rare_value_gain(epsilon, d),
                "theory": ss_gain({k: c.theory for k, c in mine.items()}),
                "simulated": ss_gain({k: c.simulated for k, c in mine.items()}),
            }
        )
    columns = [
        Column("epsilon", "ε", "{:.3g}"),
        Column("d", "d", "{:,}"),
        Column("rare", "gain, rare value (docs/design.md)", "{:.1%}"),
        Column("theory", "gain, even spread (planner)", "{:.1%}"),
        Column("simulated", "gain, simulated", "{:.1%}"),
    ]
    notes = "1 − Var(ss)/min(Var(grr), Var(oue)) at the crossover d ≈ 3e^ε + 2."
    return Table("Subset selection's gain at the crossover", columns, rows, notes)


def variance_table(cells: list[Cell], sizes: Sizes) -> Table:
    """Return one row per (ε, d, kind): closed form, simulated, their ratio."""
    rows = [
        {
            "epsilon": c.epsilon,
            "d": c.d,
            "mechanism": c.mechanism,
            "theory": c.theory,
            "simulated": c.simulated,
            "ratio": c.simulated / c.theory,
            "samples": c.samples,
        }
        for c in cells
    ]
    columns = [
        Column("epsilon", "ε", "{:.3g}"),
        Column("d", "d", "{:,}"),
        Column("mechanism", "kind"),
        Column("theory", "Var closed form", "{:,.0f}"),
        Column("simulated", "Var simulated", "{:,.0f}"),
        Column("ratio", "simulated / closed form", "{:.3f}"),
        Column("samples", "squared errors", "{:,}"),
    ]
    notes = f"Variance of one value's count, n = {sizes.n:,} reports spread evenly over d."
    return Table("Each kind's variance against its closed form", columns, rows, notes)


@dataclass(frozen=True)
class CrossoverMap:
    """The (ε, d) grid; the least-variance kind besides ss at each; ss's gain over it."""

    epsilons: np.ndarray
    domains: np.ndarray
    best_other: list[list[str]]
    ss_gain: np.ndarray


def crossover_map(sizes: Sizes) -> CrossoverMap:
    """Return the least-variance kind other than ss at each (ε, d), and ss's gain over it."""
    epsilons = np.linspace(0.5, 8.0, sizes.map_epsilons)
    domains = np.unique(np.geomspace(3, 4096, sizes.map_domains).round().astype(int))
    best, gain = [], np.zeros((len(epsilons), len(domains)))
    for i, epsilon in enumerate(epsilons):
        row = []
        for j, d in enumerate(domains):
            table = compare(float(epsilon), int(d), max_report_bytes=1 << 20)
            variances = {c.mechanism: c.variance_per_report for c in table}
            other = next(c.mechanism for c in table if c.mechanism != "ss")
            row.append(other)
            gain[i, j] = 1.0 - variances["ss"] / variances[other]
        best.append(row)
    return CrossoverMap(epsilons, domains, best, gain)


def plot(cells: list[Cell], sizes: Sizes, path: Path) -> Path:
    """Draw simulated/closed-form variance per kind, the crossover map and ss's gain."""
    fig, (ratio, chart, saving) = plotting.figure(panels=3, width=5.4, height=4.6)
    for index, kind in enumerate(AUTO_KINDS):
        mine = [c for c in cells if c.mechanism == kind]
        ratio.plot(
            [c.d * (1 + 0.03 * index) for c in mine],
            [c.simulated / c.theory for c in mine],
            color=f"C{index}",
            label=kind,
            **plotting.EMPIRICAL_STYLE,
        )
    ratio.axhline(1.0, color="black", **plotting.THEORY_STYLE)
    ratio.set_xscale("log")
    ratio.set_xlabel("domain size d")
    ratio.set_ylabel("simulated variance / closed form")
    ratio.set_title(f"n = {sizes.n:,}, ε in {', '.join(f'{e:g}' for e in sizes.epsilons)}")
    ratio.legend(fontsize=8)
    grid = crossover_map(sizes)
    codes = np.array([[AUTO_KINDS.index(k) for k in row] for row in grid.best_other])
    chart.pcolormesh(
        grid.domains, grid.epsilons, codes, cmap="tab10", vmin=0, vmax=9, shading="nearest"
    )
    for index, kind in enumerate(AUTO_KINDS):
        if (codes == index).any():
            chart.plot([], [], "s", color=f"C{index}", label=kind)
    for axes in (chart, saving):
        axes.plot(3 * np.exp(grid.epsilons) + 2, grid.epsilons, color="white", label="d = 3e^ε + 2")
        axes.set_xscale("log")
        axes.set_xlim(grid.domains[0], grid.domains[-1])
        axes.set_xlabel("domain size d")
        axes.set_ylabel("ε")
    chart.set_title("least-variance kind besides ss (closed forms)")
    chart.legend(fontsize=8, loc="upper left")
    mesh = saving.pcolormesh(
        grid.domains, grid.epsilons, 100 * grid.ss_gain, cmap="viridis", shading="nearest"
    )
    fig.colorbar(mesh, ax=saving, label="ss's variance saving, %")
    for epsilon, d in CROSSOVERS:
        saving.plot([d], [epsilon], "o", color="red", markerfacecolor="none")
    saving.set_title("ss's saving over the best other kind")
    return plotting.save(fig, path)


def run(settings: RunSettings) -> list[Path]:
    """Compute, plot and tabulate; return the files written."""
    sizes = QUICK if settings.quick else FULL
    cells = compute(sizes, settings.rng(), settings.show_progress)
    folder = settings.folder(NAME)
    return [
        plot(cells, sizes, folder / f"{NAME}.png"),
        *variance_table(cells, sizes).write(folder, NAME),
        *gains_table(cells).write(folder, f"{NAME}_gain"),
    ]
