"""Which mechanism estimates a count most accurately, for a given epsilon and domain size.

For a domain of d values and n reports spread evenly over it, the RMSE of one value's count is
computed from the closed forms (ldp_telemetry.shared.accuracy, plus the hash-collision term of the
sketches from simulations/common/theory.py) for randomized response (d = 2), generalized RR (Wang
et al. 2017; d <= 4096), CMS and HCMS (Apple 2017) and OLH (Wang et al. 2017, with k hash rows),
and checked by simulation (exact sum samplers, or OLH's own privatize_many, with a fresh hash
family per repetition, so collisions are averaged as in the formula). GRR's error grows with d, the
sketches' and OLH's do not; CMS sends m bits per report, HCMS one, which costs HCMS accuracy; OLH
sends a row and one of g = ⌊e^ε⌋+1 buckets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ldp_telemetry.shared import (
    GeneralizedRandomizedResponse,
    OptimizedLocalHashing,
    RandomizedResponse,
)
from ldp_telemetry.shared.accuracy import grr_count_variance, olh_count_variance, rr_count_variance
from ldp_telemetry.shared.mechanisms.grr import MAX_DOMAIN
from simulations.common import plotting, stats
from simulations.common.population import Population, uniform_population
from simulations.common.sampler import sample_grr_sums, sample_rr_sums
from simulations.common.settings import RunSettings, progress
from simulations.common.tables import Column, Table
from simulations.common.theory import collision_variance
from simulations.frequency.sketch_accuracy import MECHANISMS as SKETCHES

NAME = "choose_mechanism"
SUMMARY = (
    "which mechanism (rr/grr, cms, hcms, olh) estimates a count most accurately for a given "
    "epsilon and domain size: a table from the closed forms with a simulated check"
)
ORDER = ("rr/grr", "cms", "hcms", "olh")


@dataclass(frozen=True)
class Sizes:
    """Epsilons and domain sizes tabulated; n reports; the sketches' k and m."""

    epsilons: tuple[float, ...]
    domains: tuple[int, ...]
    n: int
    samples: int  # errors measured per cell: repetitions × values estimated
    candidates: int  # at most this many values of the domain are estimated per repetition
    k: int
    m: int

    def reps(self, values: int) -> int:
        """Return the repetitions that give ``samples`` errors when estimating ``values``."""
        return max(2, math.ceil(self.samples / values))


QUICK = Sizes(
    epsilons=(1.0, 4.0), domains=(2, 64, 4096), n=10_000, samples=300, candidates=64, k=64, m=256
)
FULL = Sizes(
    epsilons=(0.5, 1.0, 2.0, 4.0, 8.0),
    domains=(2, 4, 16, 64, 256, 1024, 4096, 65536),
    n=100_000,
    samples=600,
    candidates=128,
    k=256,
    m=1024,
)


@dataclass(frozen=True)
class Cell:
    """One mechanism at one (epsilon, d): RMSE of a count, closed form and simulated.

    ``epsilon`` is the one asked for; ``effective_epsilon`` the one implemented.
    """

    epsilon: float
    effective_epsilon: float
    d: int
    mechanism: str
    theory: float
    simulated: float
    report_bits: int


@dataclass(frozen=True)
class Result:
    """Every measured cell and the sizes they were measured at."""

    sizes: Sizes
    cells: list[Cell]


def compute(sizes: Sizes, rng: np.random.Generator, show_progress: bool = False) -> Result:
    """Measure every mechanism that applies at every (epsilon, d)."""
    grid = [(e, d) for e in sizes.epsilons for d in sizes.domains]
    cells: list[Cell] = []
    for epsilon, d in progress(grid, NAME, show_progress):
        population = uniform_population(sizes.n, d)
        if d <= MAX_DOMAIN:
            cells.append(measure_direct(epsilon, population, sizes, rng))
        cells += [measure_sketch(name, epsilon, population, sizes, rng) for name in SKETCHES]
        cells.append(measure_olh(epsilon, population, sizes, rng))
    return Result(sizes, cells)


def measure_direct(
    epsilon: float, population: Population, sizes: Sizes, rng: np.random.Generator
) -> Cell:
    """Measure RR (d = 2, the count of yes) or GRR (d > 2) on the population."""
    n, d, counts = population.n, len(population.values), population.counts
    if d == 2:
        rr = RandomizedResponse(epsilon=epsilon)
        yes = int(counts[0])
        errors = [
            rr.estimate(sample_rr_sums(rr, yes, n - yes, rng)).estimate[0] - yes
            for _ in range(sizes.reps(1))
        ]
        theory = float(rr_count_variance(n, yes, rr.p11, rr.p10))
        return Cell(
            epsilon,
            rr.effective_epsilon,
            d,
            "rr/grr",
            math.sqrt(theory),
            stats.rmse(np.array(errors)),
            1,
        )
    grr = GeneralizedRandomizedResponse(epsilon=epsilon, domain=population.values)
    chosen = list(population.values[: sizes.candidates])
    truth = counts[: len(chosen)]
    errors = [
        grr.estimate(sample_grr_sums(grr, counts, rng), chosen).estimate - truth
        for _ in range(sizes.reps(len(chosen)))
    ]
    theory = float(np.mean(grr_count_variance(n, truth, grr.p, grr.q)))
    return Cell(
        epsilon,
        grr.effective_epsilon,
        d,
        "rr/grr",
        math.sqrt(theory),
        stats.rmse(np.array(errors)),
        math.ceil(math.log2(d)),
    )


def measure_sketch(
    name: str, epsilon: float, population: Population, sizes: Sizes, rng: np.random.Generator
) -> Cell:
    """Measure a sketch, with a fresh hash family per repetition (collisions averaged)."""
    kind, k, m = SKETCHES[name], sizes.k, sizes.m
    chosen = list(population.values[: sizes.candidates])
    truth = population.counts[: len(chosen)]
    errors = []
    for _ in range(sizes.reps(len(chosen))):
        mech = kind.build(epsilon=epsilon, k=k, m=m, hash_seed=int(rng.integers(0, 2**32)))
        sums = kind.sample(mech, population.values, population.counts, rng)
        errors.append(mech.estimate(sums, chosen).estimate - truth)
    n, counts = population.n, population.counts.astype(float)
    all_pairs = collision_variance(counts, m, k)
    collisions = all_pairs - truth * (truth - 1.0) / (k * (m - 1))  # only the others collide
    theory = float(np.mean(kind.closed_form(n, truth, m, mech.flip) + collisions))
    bits = m if name == "cms" else 1 + int(math.log2(m))
    return Cell(
        epsilon,
        mech.effective_epsilon,
        len(population.values),
        name,
        math.sqrt(theory),
        stats.rmse(np.array(errors)),
        bits + math.ceil(math.log2(k)),
    )


def measure_olh(
    epsilon: float, population: Population, sizes: Sizes, rng: np.random.Generator
) -> Cell:
    """Measure OLH by privatizing the population, a fresh hash family per repetition."""
    chosen = list(population.values[: sizes.candidates])
    truth = population.counts[: len(chosen)]
    values = [
        v for v, c in zip(population.values, population.counts, strict=True) for _ in range(int(c))
    ]
    errors = []
    for _ in range(sizes.reps(len(chosen))):
        olh = OptimizedLocalHashing(
            epsilon=epsilon, k=sizes.k, hash_seed=int(rng.integers(0, 2**32))
        )
        sums = olh.new_sums()
        sums.add_many(olh.privatize_many(values, rng))
        errors.append(olh.estimate(sums, chosen).estimate - truth)
    counts = population.counts.astype(float)
    collisions = collision_variance(counts, olh.g, sizes.k) - truth * (truth - 1.0) / (
        sizes.k * (olh.g - 1)
    )
    theory = float(np.mean(olh_count_variance(population.n, truth, olh.g, olh.p) + collisions))
    bits = math.ceil(math.log2(olh.g)) + math.ceil(math.log2(sizes.k))
    return Cell(
        epsilon,
        olh.effective_epsilon,
        len(population.values),
        "olh",
        math.sqrt(theory),
        stats.rmse(np.array(errors)),
        bits,
    )


def best(cells: list[Cell]) -> dict[tuple[float, int], str]:
    """Return the mechanism with the smallest closed-form RMSE at each (epsilon, d)."""
    winners: dict[tuple[float, int], Cell] = {}
    for cell in cells:
        key = (cell.epsilon, cell.d)
        if key not in winners or cell.theory < winners[key].theory:
            winners[key] = cell
    return {key: cell.mechanism for key, cell in winners.items()}


def table(result: Result) -> Table:
    """Return one row per (epsilon, d): each mechanism's RMSE, theory (simulated)."""
    sizes, winners = result.sizes, best(result.cells)
    rows: dict[tuple[float, int], dict[str, object]] = {}
    for cell in result.cells:
        key = (cell.epsilon, cell.d)
        row = rows.setdefault(key, {"epsilon": cell.epsilon, "d": cell.d, "best": winners[key]})
        row[f"{cell.mechanism}_theory"] = cell.theory
        row[f"{cell.mechanism}_simulated"] = cell.simulated
        row[cell.mechanism] = f"{cell.theory:,.0f} ({cell.simulated:,.0f})"
    columns = [
        Column("epsilon", "ε", "{:.3g}"),
        Column("d", "domain size d", "{:,}"),
        *(Column(name, f"{name} RMSE") for name in ORDER),
        Column("best", "most accurate"),
    ]
    csv_columns = [
        Column(f"{name}_{kind}", f"{name} {kind}", "{:.1f}", in_markdown=False)
        for name in ORDER
        for kind in ("theory", "simulated")
    ]
    notes = (
        f"RMSE of one value's count, n = {sizes.n:,} reports spread evenly over d values: "
        "closed form (simulated). rr/grr applies up to d = 4096. Report size: rr 1 bit, "
        f"grr ⌈log2 d⌉ bits, cms m + log2 k = {sizes.m + math.ceil(math.log2(sizes.k))} "
        f"bits, hcms 1 + log2 m + log2 k = "
        f"{1 + int(math.log2(sizes.m)) + math.ceil(math.log2(sizes.k))} bits, "
        f"olh log2 g + log2 k bits with g = ⌊e^ε⌋+1 (k = {sizes.k}, m = {sizes.m})."
    )
    return Table(
        "Which mechanism for a count?", [*columns, *csv_columns], list(rows.values()), notes
    )


def plot(result: Result, path: Path) -> Path:
    """Draw RMSE against d, one panel per epsilon: closed-form lines, simulated points."""
    cells = result.cells
    epsilons = sorted({c.epsilon for c in cells})
    columns = min(3, len(epsilons))
    fig, panels = plotting.figure(
        panels=columns, rows=math.ceil(len(epsilons) / columns), width=5.0, height=4.4
    )
    for spare in panels[len(epsilons) :]:
        spare.set_visible(False)
    for axes, epsilon in zip(panels, epsilons, strict=False):
        for index, name in enumerate(ORDER):
            mine = [c for c in cells if c.mechanism == name and c.epsilon == epsilon]
            d = [c.d for c in mine]
            axes.plot(
                d,
                [c.theory for c in mine],
                color=f"C{index}",
                label=f"{name} theory",
                **plotting.THEORY_STYLE,
            )
            axes.plot(
                d,
                [c.simulated for c in mine],
                color=f"C{index}",
                label=f"{name} simulated",
                **plotting.EMPIRICAL_STYLE,
            )
        axes.set_xscale("log", base=2)
        axes.set_yscale("log")
        axes.set_xlabel("domain size d")
        axes.set_ylabel("RMSE of one value's count")
        axes.set_title(
            f"ε = {epsilon:.3g}, n = {result.sizes.n:,}, "
            f"k = {result.sizes.k}, m = {result.sizes.m}",
            fontsize=10,
        )
        axes.grid(True, which="both", alpha=0.3)
        axes.legend(fontsize=7)
    return plotting.save(fig, path)


def run(settings: RunSettings) -> list[Path]:
    """Compute, plot and tabulate; return the files written."""
    result = compute(QUICK if settings.quick else FULL, settings.rng(), settings.show_progress)
    folder = settings.folder(NAME)
    return [plot(result, folder / f"{NAME}.png"), *table(result).write(folder, NAME)]
