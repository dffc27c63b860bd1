"""Accuracy of the count-mean sketches (CMS, HCMS) against their closed forms.

Apple's sketches ("Learning with Privacy at Scale", 2017) are measured over n, epsilon, m and k on a
Zipf population (exponent 1.1), estimating values nobody holds (docs/design.md's "rare item"): the
empirical SD of the count around each item's own mean is drawn beside
ldp_telemetry.shared.accuracy's closed form. With a fixed hash family a value that shares buckets
with a frequent one carries a bias, not noise; over hash families its mean square is Σ
f(d')(f(d')−1)/(k(m−1)) (simulations/common/theory.py), so the k sweep also draws the RMSE
against that total: on skewed data it dominates for small k. Sums are drawn exactly with
simulations.common.sampler, so n reaches 10^7 without materializing reports.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ldp_telemetry.shared import CountMeanSketch, HadamardCountMeanSketch, Sums
from ldp_telemetry.shared.accuracy import cms_count_variance, hcms_count_variance
from simulations.common import plotting, stats
from simulations.common.population import Population, value_names, zipf_population
from simulations.common.sampler import sample_cms_sums, sample_hcms_sums
from simulations.common.settings import RunSettings, progress
from simulations.common.tables import Column, Table
from simulations.common.theory import collision_variance, sketch_noise_variance

NAME = "sketch_accuracy"
SUMMARY = (
    "CMS and HCMS: empirical SD of a count against the closed form over n, epsilon, "
    "m and k, and the hash-collision bias of small k on Zipf data"
)


@dataclass(frozen=True)
class SketchKind:
    """A sketch class with its exact sum sampler and its closed-form variance."""

    build: Callable[..., CountMeanSketch | HadamardCountMeanSketch]
    sample: Callable[..., Sums]
    closed_form: Callable[..., np.ndarray]


MECHANISMS = {
    "cms": SketchKind(CountMeanSketch, sample_cms_sums, cms_count_variance),
    "hcms": SketchKind(HadamardCountMeanSketch, sample_hcms_sums, hcms_count_variance),
}
SWEEPS = ("n", "epsilon", "m", "k")
HEAVY = 100  # most frequent population values added to the candidate list


@dataclass(frozen=True)
class Sizes:
    """The four sweeps; each varies one parameter from the base (n, epsilon=4, m, k)."""

    ns: tuple[int, ...]
    epsilons: tuple[float, ...]
    ms: tuple[int, ...]
    ks: tuple[int, ...]
    base_n: int
    base_m: int
    base_k: int
    k_sweep_m: int  # fewer buckets make collisions, hence the k effect, easier to see
    vocabulary: int
    rare: int  # candidates nobody holds, estimated in every repetition
    reps: int  # repetitions per hash family
    families: int  # hash families (hash seeds) per point
    base_epsilon: float = 4.0


QUICK = Sizes(
    ns=(10_000, 100_000),
    epsilons=(1.0, 4.0),
    ms=(64, 1024),
    ks=(1, 16, 1024),
    base_n=30_000,
    base_m=1024,
    base_k=64,
    k_sweep_m=64,
    vocabulary=1_000,
    rare=150,
    reps=8,
    families=3,
)
FULL = Sizes(
    ns=(10_000, 100_000, 1_000_000, 10_000_000),
    epsilons=(0.5, 1.0, 2.0, 4.0, 8.0),
    ms=(16, 64, 256, 1024, 4096),
    ks=(1, 4, 16, 64, 256, 1024, 4096),
    base_n=100_000,
    base_m=1024,
    base_k=1024,
    k_sweep_m=64,
    vocabulary=10_000,
    rare=500,
    reps=6,
    families=5,
)


@dataclass(frozen=True)
class Point:
    """One measured configuration: empirical and closed-form SD and RMSE, CI coverage."""

    sweep: str
    mechanism: str
    n: int
    epsilon: float
    m: int
    k: int
    sd: float
    sd_theory: float
    rmse: float
    rmse_theory: float
    coverage: float


def configurations(sizes: Sizes) -> Iterator[tuple[str, str, int, float, int, int]]:
    """Yield (sweep, mechanism, n, epsilon, m, k) for every point to measure."""
    s = sizes
    for mechanism in MECHANISMS:
        for n in s.ns:
            yield "n", mechanism, n, s.base_epsilon, s.base_m, s.base_k
        for epsilon in s.epsilons:
            yield "epsilon", mechanism, s.base_n, epsilon, s.base_m, s.base_k
        for m in s.ms:
            yield "m", mechanism, s.base_n, s.base_epsilon, m, s.base_k
        for k in s.ks:
            yield "k", mechanism, s.base_n, s.base_epsilon, s.k_sweep_m, k


def compute(sizes: Sizes, rng: np.random.Generator, show_progress: bool = False) -> list[Point]:
    """Measure every configuration of the four sweeps."""
    configs = list(configurations(sizes))
    populations: dict[int, Population] = {}
    points = []
    for sweep, mechanism, n, epsilon, m, k in progress(configs, NAME, show_progress):
        if n not in populations:
            populations[n] = zipf_population(n, sizes.vocabulary)
        points.append(measure(sweep, mechanism, populations[n], epsilon, m, k, sizes, rng))
    return points


def measure(
    sweep: str,
    mechanism: str,
    population: Population,
    epsilon: float,
    m: int,
    k: int,
    sizes: Sizes,
    rng: np.random.Generator,
) -> Point:
    """Estimate ``sizes.rare`` absent values over several hash families and repetitions."""
    kind = MECHANISMS[mechanism]
    rare = len(value_names("rare", sizes.rare))
    # An analyst's candidate list holds the frequent values too: the estimator sizes every
    # interval's collision term from the candidates' counts. Only the rare ones are scored.
    heavy = [population.values[i] for i in np.argsort(population.counts)[::-1][:HEAVY]]
    candidates = list(value_names("rare", sizes.rare)) + heavy
    noise, errors, covered = [], [], []
    for _ in range(sizes.families):
        mech = kind.build(epsilon=epsilon, k=k, m=m, hash_seed=int(rng.integers(0, 2**32)))
        family = [
            mech.estimate(kind.sample(mech, population.values, population.counts, rng), candidates)
            for _ in range(sizes.reps)
        ]
        family_errors = np.stack([e.estimate[:rare] for e in family])  # the truth is 0
        noise.append(stats.within_sd(family_errors) ** 2)
        errors.append(family_errors)
        covered += [stats.coverage(e.ci_low[:rare], e.ci_high[:rare], 0.0) for e in family]
    n = population.n
    variance = float(kind.closed_form(n, 0, m, mech.flip))
    return Point(
        sweep,
        mechanism,
        n,
        mech.effective_epsilon,
        m,
        k,
        sd=float(np.sqrt(np.mean(noise))),
        sd_theory=float(np.sqrt(sketch_noise_variance(variance, n, 0, m, k))),
        rmse=stats.rmse(np.concatenate(errors)),
        rmse_theory=float(np.sqrt(variance + collision_variance(population.counts, m, k))),
        coverage=float(np.mean(covered)),
    )


def plot(points: list[Point], path: Path) -> Path:
    """Draw the four sweeps in a 2 × 2 grid, each mechanism's theory line beside its points."""
    fig, panels = plotting.figure(panels=2, rows=2, width=6.6, height=4.8)
    for axes, sweep in zip(panels, SWEEPS, strict=True):
        for index, mechanism in enumerate(MECHANISMS):
            mine = [p for p in points if p.sweep == sweep and p.mechanism == mechanism]
            x = [_x(p, sweep) for p in mine]
            color = f"C{index}"
            axes.plot(
                x,
                [p.sd_theory for p in mine],
                color=color,
                label=f"{mechanism} SD, theory",
                **plotting.THEORY_STYLE,
            )
            axes.plot(
                x,
                [p.sd for p in mine],
                color=color,
                label=f"{mechanism} SD, simulated",
                **plotting.EMPIRICAL_STYLE,
            )
            if sweep in ("n", "k"):  # where the collision bias shows on this data
                axes.plot(
                    x,
                    [p.rmse_theory for p in mine],
                    color=color,
                    linestyle="--",
                    label=f"{mechanism} RMSE with collisions, theory",
                )
                axes.plot(
                    x,
                    [p.rmse for p in mine],
                    color=color,
                    marker="x",
                    linestyle="none",
                    label=f"{mechanism} RMSE, simulated",
                )
        _label(axes, sweep, points)
    return plotting.save(fig, path)


def _x(point: Point, sweep: str) -> float:
    return float(getattr(point, sweep))


def _label(axes: plotting.Axes, sweep: str, points: list[Point]) -> None:
    first = next(p for p in points if p.sweep == sweep)
    fixed = {
        "n": f"ε = {first.epsilon:g}, m = {first.m}, k = {first.k}",
        "epsilon": f"n = {first.n:,}, m = {first.m}, k = {first.k}",
        "m": f"n = {first.n:,}, ε = {first.epsilon:g}, k = {first.k}",
        "k": f"Zipf(1.1) data, n = {first.n:,}, ε = {first.epsilon:g}, m = {first.m}",
    }
    axes.set_xscale("log", base=2 if sweep in ("m", "k") else 10)
    axes.set_yscale("log")
    if sweep == "epsilon":  # label the measured epsilons, not log-scale minor ticks
        values = sorted({round(p.epsilon, 3) for p in points if p.sweep == sweep})
        axes.set_xticks(values, labels=[f"{v:g}" for v in values])
        axes.xaxis.set_minor_formatter(plotting.NullFormatter())
    axes.set_xlabel(
        {"n": "n (reports)", "epsilon": "ε", "m": "m (buckets per row)", "k": "k (hash rows)"}[
            sweep
        ]
    )
    axes.set_ylabel("error of a rare item's count")
    axes.set_title(f"vs {sweep}: {fixed[sweep]}", fontsize=10)
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=7)


def table(points: list[Point]) -> Table:
    """Return one row per measured configuration."""
    columns = [
        Column("sweep", "sweep"),
        Column("mechanism", "mechanism"),
        Column("n", "n", "{:,}"),
        Column("epsilon", "ε", "{:.3g}"),
        Column("m", "m", "{:d}"),
        Column("k", "k", "{:d}"),
        Column("sd", "SD (sim)", "{:.1f}"),
        Column("sd_theory", "SD (theory)", "{:.1f}"),
        Column("rmse", "RMSE (sim)", "{:.1f}"),
        Column("rmse_theory", "RMSE (theory)", "{:.1f}"),
        Column("coverage", "95% CI coverage", "{:.3f}"),
    ]
    return Table(
        "Count error of a value nobody holds (rare item), Zipf(1.1) population",
        columns,
        [vars(p) for p in points],
    )


def run(settings: RunSettings) -> list[Path]:
    """Compute, plot and tabulate; return the files written."""
    points = compute(QUICK if settings.quick else FULL, settings.rng(), settings.show_progress)
    folder = settings.folder(NAME)
    return [plot(points, folder / f"{NAME}.png"), *table(points).write(folder, NAME)]
