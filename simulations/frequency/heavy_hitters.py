"""Dictionary-free heavy hitters (task kind hh, docs/design.md) against the dictionary ceiling.

Population: V distinct strings of 3–16 letters a–z, Zipf(1.1) over them (issue 16). Each
device's level is uniform over the G levels and fixed, so a value's f devices split over
the levels as Multinomial(f, 1/G); level g's sums are then those of an ordinary CMS fed
the level's items, drawn exactly with simulations.common.sampler (no report is materialized).
The ceiling is a CMS with the same ε, k and m that all n devices report to and that is
queried with the exact dictionary (every population string). Scores: top-K precision
(= recall, both lists have K entries) for K = 10 and 20, and the share of rows flagged
``reliable`` that are true top-20 strings and that no device holds at all; plus the
discovery query's wall time.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ldp_telemetry.shared import CountMeanSketch
from ldp_telemetry.shared.mechanisms.hh.mechanism import HeavyHitters, HeavyHitterSums
from simulations.common import plotting
from simulations.common.sampler import sample_cms_sums
from simulations.common.settings import RunSettings, progress
from simulations.common.tables import Column, Table

NAME = "heavy_hitters"
SUMMARY = (
    "hh: top-10/top-20 precision of dictionary-free discovery over n, epsilon and "
    "the step, against the exact-dictionary CMS ceiling (Zipf strings a-z)"
)
LETTERS = "abcdefghijklmnopqrstuvwxyz"
TOPS = (10, 20)


@dataclass(frozen=True)
class Sizes:
    """The base setting and the sweeps around it (one parameter varies at a time)."""

    n: int
    epsilon: float
    k: int
    m: int
    max_length: int
    vocabulary: int
    seeds: int
    ns: tuple[int, ...]
    epsilons: tuple[float, ...]
    steps: tuple[int, ...]
    step: int = 2


QUICK = Sizes(
    n=40_000,
    epsilon=4.0,
    k=128,
    m=256,
    max_length=8,
    vocabulary=2_000,
    seeds=2,
    ns=(40_000,),
    epsilons=(4.0,),
    steps=(1, 2),
)
FULL = Sizes(
    n=1_000_000,
    epsilon=4.0,
    k=2048,
    m=1024,
    max_length=16,
    vocabulary=100_000,
    seeds=5,
    ns=(100_000, 1_000_000, 10_000_000),
    epsilons=(1.0, 2.0, 4.0, 8.0),
    steps=(1, 2),
)


@dataclass(frozen=True)
class Point:
    """Means over seeds at one setting."""

    sweep: str
    n: int
    epsilon: float
    step: int
    top10: float
    top20: float
    ceiling10: float
    ceiling20: float
    reliable_rows: float
    reliable_precision: float
    reliable_spurious: float
    query_seconds: float
    examined: int


def strings(count: int, max_length: int, rng: np.random.Generator) -> list[str]:
    """Return ``count`` distinct random strings of 3 to ``max_length`` letters."""
    found: dict[str, None] = {}
    letters = np.array(list(LETTERS))
    while len(found) < count:
        length = int(rng.integers(3, max_length + 1))
        found.setdefault("".join(rng.choice(letters, size=length)), None)
    return list(found)


def sample_hh_sums(
    hh: HeavyHitters, values: list[str], counts: np.ndarray, rng: np.random.Generator
) -> HeavyHitterSums:
    """Return the exact-in-distribution sums of the devices' reports (one per device)."""
    split = rng.multinomial(counts, np.full(hh.level_count, 1.0 / hh.level_count))
    sums = hh.new_sums()
    units = [hh.units(v) for v in values]
    for g in range(hh.level_count):
        per_item: dict[str, int] = defaultdict(int)
        for value_units, count in zip(units, split[:, g].tolist(), strict=True):
            if count:
                per_item[hh.item(value_units, g)] += count
        level = sample_cms_sums(
            hh.sketches[g],
            list(per_item),
            np.fromiter(per_item.values(), np.int64, len(per_item)),
            rng,
        )
        rows = slice(g * hh.k, (g + 1) * hh.k)
        sums.n[rows] += level.n
        sums.table[rows] += level.table
    return sums


def measure(
    sizes: Sizes, sweep: str, n: int, epsilon: float, step: int, rng: np.random.Generator
) -> Point:
    """Run ``sizes.seeds`` populations and privatizations at one setting; return the means."""
    scores: dict[str, list[float]] = defaultdict(list)
    for _ in range(sizes.seeds):
        values = strings(sizes.vocabulary, sizes.max_length, rng)
        weights = np.arange(1, len(values) + 1, dtype=float) ** -1.1
        counts = rng.multinomial(n, weights / weights.sum())
        truth = [values[i] for i in np.argsort(-counts, kind="stable")]
        seed = int(rng.integers(0, 2**32))
        hh = HeavyHitters(
            epsilon=epsilon,
            k=sizes.k,
            m=sizes.m,
            hash_seed=seed,
            alphabet=LETTERS,
            max_length=sizes.max_length,
            step=step,
        )
        sums = sample_hh_sums(hh, values, counts, rng)
        started = time.perf_counter()
        found = hh.discover(sums, top=max(TOPS), survivors=64)
        scores["query_seconds"].append(time.perf_counter() - started)
        scores["examined"].append(float(sum(found.examined)))
        cms = CountMeanSketch(epsilon=epsilon, k=sizes.k, m=sizes.m, hash_seed=seed)
        ceiling = cms.estimate(sample_cms_sums(cms, values, counts, rng), values)
        ranked = [values[i] for i in np.argsort(-ceiling.estimate, kind="stable")]
        discovered = list(found.estimates.values)
        for top in TOPS:
            scores[f"top{top}"].append(len(set(discovered[:top]) & set(truth[:top])) / top)
            scores[f"ceiling{top}"].append(len(set(ranked[:top]) & set(truth[:top])) / top)
        flagged = [v for v, r in zip(discovered, found.reliable, strict=True) if r]
        scores["reliable_rows"].append(len(flagged))
        if flagged:
            scores["reliable_precision"].append(len(set(flagged) & set(truth[:20])) / len(flagged))
            held = {v for v, c in zip(values, counts, strict=True) if c > 0}
            scores["reliable_spurious"].append(len(set(flagged) - held) / len(flagged))
    mean = {key: float(np.mean(v)) if v else float("nan") for key, v in scores.items()}
    return Point(
        sweep,
        n,
        epsilon,
        step,
        mean["top10"],
        mean["top20"],
        mean["ceiling10"],
        mean["ceiling20"],
        mean["reliable_rows"],
        mean.get("reliable_precision", float("nan")),
        mean.get("reliable_spurious", float("nan")),
        mean["query_seconds"],
        int(mean["examined"]),
    )


def configurations(sizes: Sizes) -> list[tuple[str, int, float, int]]:
    """Return (sweep, n, epsilon, step) for every setting (the base setting once per sweep)."""
    s = sizes
    return (
        [("n", n, s.epsilon, s.step) for n in s.ns]
        + [("epsilon", s.n, e, s.step) for e in s.epsilons]
        + [("step", s.n, s.epsilon, step) for step in s.steps]
    )


def compute(sizes: Sizes, rng: np.random.Generator, show_progress: bool = False) -> list[Point]:
    """Measure every setting; the base setting is measured once and reused by each sweep."""
    done: dict[tuple[int, float, int], Point] = {}
    points = []
    for sweep, n, epsilon, step in progress(configurations(sizes), NAME, show_progress):
        if (n, epsilon, step) not in done:
            done[(n, epsilon, step)] = measure(sizes, sweep, n, epsilon, step, rng)
        points.append(replace(done[(n, epsilon, step)], sweep=sweep))
    return points


def plot(points: list[Point], sizes: Sizes, path: Path) -> Path:
    """Draw top-10/top-20 precision beside the dictionary ceiling, one panel per sweep."""
    fig, panels = plotting.figure(panels=3, width=5.0, height=4.2)
    for axes, sweep in zip(panels, ("n", "epsilon", "step"), strict=True):
        mine = [p for p in points if p.sweep == sweep]
        x = [float(getattr(p, sweep)) for p in mine]
        for index, top in enumerate(TOPS):
            axes.plot(
                x,
                [getattr(p, f"top{top}") for p in mine],
                color=f"C{index}",
                label=f"hh top-{top}",
                **plotting.EMPIRICAL_STYLE,
            )
            axes.plot(
                x,
                [getattr(p, f"ceiling{top}") for p in mine],
                color=f"C{index}",
                label=f"dictionary CMS top-{top}",
                **plotting.THEORY_STYLE,
            )
        if sweep == "n":
            axes.set_xscale("log")
        axes.set_xlabel({"n": "n (devices)", "epsilon": "ε", "step": "step s (symbols)"}[sweep])
        axes.set_ylabel("precision = recall")
        axes.set_ylim(0, 1.05)
        axes.set_title(f"vs {sweep} (k={sizes.k}, m={sizes.m}, L={sizes.max_length})", fontsize=10)
        axes.grid(True, alpha=0.3)
        axes.legend(fontsize=7)
    return plotting.save(fig, path)


def table(points: list[Point], sizes: Sizes) -> Table:
    """Return one row per setting and sweep."""
    columns = [
        Column("sweep", "sweep"),
        Column("n", "n", "{:,}"),
        Column("epsilon", "ε", "{:g}"),
        Column("step", "s", "{:d}"),
        Column("top10", "top-10", "{:.2f}"),
        Column("top20", "top-20", "{:.2f}"),
        Column("ceiling10", "dict. top-10", "{:.2f}"),
        Column("ceiling20", "dict. top-20", "{:.2f}"),
        Column("reliable_rows", "reliable rows", "{:.1f}"),
        Column("reliable_precision", "reliable ∈ true top-20", "{:.3f}"),
        Column("reliable_spurious", "reliable held by nobody", "{:.3f}"),
        Column("query_seconds", "query s", "{:.1f}"),
        Column("examined", "candidates", "{:,}"),
    ]
    notes = (
        f"Zipf(1.1) over {sizes.vocabulary:,} strings of 3–{sizes.max_length} letters "
        f"a–z; k = {sizes.k}, m = {sizes.m}, L0 = 2, 64 survivors; mean of "
        f"{sizes.seeds} seeds"
    )
    return Table(
        "Heavy hitters without a dictionary vs the dictionary CMS ceiling",
        columns,
        [vars(p) for p in points],
        notes,
    )


def run(settings: RunSettings) -> list[Path]:
    """Compute, plot and tabulate; return the files written."""
    sizes = QUICK if settings.quick else FULL
    points = compute(sizes, settings.rng(), settings.show_progress)
    folder = settings.folder(NAME)
    return [plot(points, sizes, folder / f"{NAME}.png"), *table(points, sizes).write(folder, NAME)]
