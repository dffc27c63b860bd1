"""Breakdowns: per-slice intervals, and comparisons between slices as tests.

Two slices of one task (say two platforms) hold n devices each, over d values with shares
``SHARES``. Each repetition draws both slices' sums exactly in distribution
(:mod:`simulations.common.sampler`, the mechanisms' implemented probabilities), estimates
each slice with the mechanism's own estimator (as the collector does per slice), and
compares them with :func:`ldp_telemetry.shared.breakdowns.comparison.compare_values`: each
value's share difference, SE = √(SE_a² + SE_b²) (independent slices), its two-sided
p-value, and Holm's step-down at α = 0.05 over the d values. Per mechanism and n:

- ``coverage``: the share of per-slice 95% intervals that hold the slice's true count
  (pooled over values and both slices; each repetition draws a new hash seed, as a new task
  would);
- ``FWER``: with equal slices, the share of repetitions where any value is called
  significant — after Holm (at most α by theorem) and uncorrected (p < α per value; about
  1 − 0.95^d when the values' tests are nearly independent); Holm's over ``null_reps``
  repetitions with its exact 95% interval, beside the normal approximation's rate
  (:func:`fwer_theory`, at most Šidák's 1 − (1 − α/d)^d < α);
- ``power``: with value 0's share 2 points higher in slice b (value 1's 2 points lower),
  the share of repetitions where value 0 is significant after Holm; the theory beside it is
  Bonferroni's first step (a lower bound for Holm): P(|Z + δ/SE| > z_{1−α/(2d)}) with the
  mean SE reported; the family-wise error among the values left equal; and the coverage
  of the difference intervals (each value's interval holding its true share difference).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np

from ldp_telemetry.shared import TaskConfig
from ldp_telemetry.shared.breakdowns.comparison import Compared, Side, compare_values
from ldp_telemetry.shared.hashing import MAX_SEED
from simulations.breakdowns import periods
from simulations.common import plotting
from simulations.common.sampler import sample_cms_sums, sample_grr_sums, sample_rr_sums
from simulations.common.settings import RunSettings, progress
from simulations.common.stats import clopper_pearson
from simulations.common.tables import Column, Table

NAME = "dimensions"
SUMMARY = (
    "breakdowns: coverage of per-slice intervals, family-wise false positives of "
    "'significant' on equal slices (Holm vs uncorrected) and power on a planted 2-point "
    "difference, eps = 2"
)
EPSILON, ALPHA, PLANTED = 2.0, 0.05, 0.02
SHARES = (0.30, 0.20, 0.15, 0.10, 0.10, 0.08, 0.04, 0.03)  # d = 8 values
KINDS = ("rr", "grr", "cms")


@dataclass(frozen=True)
class Sizes:
    """Devices per slice, repetitions per (kind, n), and those of equal slices alone (the
    family-wise error: enough runs that its interval decides against α)."""

    sizes: tuple[int, ...]
    reps: int
    null_reps: int = 0  # 0: the same as reps
    null_kinds: tuple[str, ...] = ("rr", "grr", "cms")  # the kinds that get null_reps


QUICK = Sizes(sizes=(10_000, 100_000), reps=150)
QUICK_PERIODS, FULL_PERIODS = (5_000, 100), (20_000, 1_000)  # periods.compute's (n, reps)
# cms's equal-slice runs cost 20× grr's: it keeps 1,000 (its rates' intervals are wide, and
# its theory column is Šidák's bound); the extra runs go to rr and grr (simulations/README.md).
FULL = Sizes(
    sizes=(3_000, 10_000, 30_000, 100_000), reps=1_000, null_reps=10_000, null_kinds=("rr", "grr")
)


@dataclass(frozen=True)
class Row:
    """What the repetitions of one (kind, n) found."""

    kind: str
    n: int
    reps: int
    coverage: float
    fwer_holm: float
    fwer_uncorrected: float
    power: float
    power_theory: float
    fwer_planted: float
    difference_coverage: float
    null_reps: int = 0
    fwer_low: float = 0.0  # the Holm rate's exact 95% interval over null_reps runs
    fwer_high: float = 1.0
    fwer_theory: float = 0.0  # the normal approximation's rate (fwer_theory())


def counts_of(shares: tuple[float, ...], n: int) -> np.ndarray:
    """Return n devices split by ``shares`` (largest remainders; the slice's truth)."""
    exact = np.array(shares) * n
    counts = np.floor(exact).astype(np.int64)
    counts[np.argsort(counts - exact)[: n - int(counts.sum())]] += 1
    return counts


def planted(shares: tuple[float, ...]) -> tuple[float, ...]:
    """Return the shares with value 0 ``PLANTED`` higher and value 1 as much lower."""
    return (shares[0] + PLANTED, shares[1] - PLANTED, *shares[2:])


class Slices:
    """One kind's mechanism (a fresh hash seed per repetition) and its exact sums sampler."""

    def __init__(self, kind: str, rng: np.random.Generator) -> None:
        self.kind, self.rng = kind, rng
        self.values = [str(i) for i in range(len(SHARES))]
        self.mechanism: Any = None

    def new_task(self) -> None:
        """Build the mechanism afresh, as a new task would be (a new hash seed)."""
        fields: dict[str, Any] = {"task_id": "sim", "mechanism": self.kind, "epsilon": EPSILON}
        if self.kind == "grr":
            fields["domain"] = self.values
        if self.kind == "cms":
            seed = int(self.rng.integers(0, MAX_SEED + 1))
            fields.update(k=64, m=1024, hash_seed=seed)
        self.mechanism = TaskConfig(**fields).mechanism_object

    def estimate(self, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Return one slice's (estimate, SE, low, high) per value, from sampled sums."""
        mechanism, n = self.mechanism, int(counts.sum())
        if self.kind == "rr":  # one yes/no question: value 0 is "yes", the rest "no"
            result = mechanism.estimate(
                sample_rr_sums(mechanism, int(counts[0]), n - int(counts[0]), self.rng)
            )
        elif self.kind == "grr":
            result = mechanism.estimate(sample_grr_sums(mechanism, counts, self.rng))
        else:
            sums = sample_cms_sums(mechanism, self.values, counts, self.rng)
            result = mechanism.estimate(sums, self.values)
        return result.estimate, result.std_error, result.ci_low, result.ci_high

    def truth(self, counts: np.ndarray) -> np.ndarray:
        """Return the counts the estimates are of (rr: yes and no)."""
        if self.kind == "rr":
            return np.array([counts[0], counts.sum() - counts[0]])
        return counts


def compared(
    a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray], n: int
) -> list[Compared]:
    """Return each value's share difference a − b, tested as the collector's compare does."""
    sides = [[Side(e / n, s / n) for e, s in zip(*side, strict=True)] for side in (a, b)]
    return compare_values(list(range(len(sides[0]))), sides[0], sides[1], alpha=ALPHA)


def significant(rows: list[Compared]) -> tuple[np.ndarray, np.ndarray]:
    """Return, per value, whether its difference is significant after Holm, and uncorrected."""
    holm = np.array([row.significant for row in rows])
    raw = np.array([row.difference.p_value < ALPHA for row in rows])
    return holm, raw


def run_one(kind: str, n: int, reps: int, rng: np.random.Generator, null_reps: int = 0) -> Row:
    """Return one (kind, n)'s coverage and power over ``reps`` runs, and its family-wise
    error over max(reps, null_reps) runs of equal slices, with its exact 95% interval."""
    slices = Slices(kind, rng)
    equal, shifted = counts_of(SHARES, n), counts_of(planted(SHARES), n)
    covered = total = any_holm = any_raw = found = planted_false = 0
    differences_covered = 0
    ses: list[float] = []
    moved = (slices.truth(shifted) - slices.truth(equal)) / n  # the planted differences
    for _ in range(reps):
        slices.new_task()
        first, second = slices.estimate(equal), slices.estimate(equal)
        truth = slices.truth(equal)
        for _, _, low, high in (first, second):
            covered += int(np.sum((low <= truth) & (truth <= high)))
            total += len(truth)
        holm, raw = significant(compared(first[:2], second[:2], n))
        any_holm += bool(holm.any())
        any_raw += bool(raw.any())
        third = slices.estimate(shifted)
        planted_rows = compared(third[:2], first[:2], n)
        differences_covered += sum(
            row.difference.ci_low <= true <= row.difference.ci_high
            for row, true in zip(planted_rows, moved, strict=True)
        )
        holm, _ = significant(planted_rows)
        found += bool(holm[0])
        unchanged = holm[2:] if kind != "rr" else np.zeros(0, bool)
        planted_false += bool(unchanged.any())
        ses.append(math.hypot(third[1][0], first[1][0]) / n)
    runs = max(reps, null_reps)
    for _ in range(runs - reps):  # more runs of equal slices alone
        slices.new_task()
        holm, raw = significant(compared(slices.estimate(equal)[:2], slices.estimate(equal)[:2], n))
        any_holm += bool(holm.any())
        any_raw += bool(raw.any())
    tests = 2 if kind == "rr" else len(SHARES)
    return Row(
        kind,
        n,
        reps,
        covered / total,
        any_holm / runs,
        any_raw / runs,
        found / reps,
        power_bound(PLANTED, float(np.mean(ses)), tests),
        planted_false / reps,
        differences_covered / (reps * len(moved)),
        runs,
        *clopper_pearson(any_holm, runs),
        fwer_theory(
            kind, equal, getattr(slices.mechanism, "p", 0.0), getattr(slices.mechanism, "q", 0.0)
        ),
    )


def fwer_theory(kind: str, counts: np.ndarray, p: float, q: float, draws: int = 4_000_000) -> float:
    """Return Holm's family-wise error on equal slices under the normal approximation.

    With every value equal, Holm rejects anything iff the smallest p-value is ≤ α/m, so the
    rate is P(max_i |Z_i| ≥ z_{1−α/(2m)}) for the m tested differences' z-scores Z ~ N(0, R).
    Šidák (1967): for any correlation R it is at most 1 − (1 − α/m)^m (0.0489 for m = 8) —
    below α, so α holds with room as long as the normal approximation does; that is what the
    simulated rates check. rr: its 2 answers' estimates are exactly anti-correlated (one
    test), α/2. grr: R from the reports' exact multinomial covariance (value v is reported
    as itself with probability p, as each other with q), the rate by Monte Carlo over
    ``draws`` normal vectors (its error about ±0.0002). cms: the Šidák bound (its R depends
    on the hash seed).
    """
    m = len(counts)
    if kind == "rr":
        return ALPHA / 2
    if kind != "grr":
        return 1.0 - (1.0 - ALPHA / m) ** m
    rows = np.full((m, m), q) + np.eye(m) * (p - q)  # row v: what a device holding v reports
    covariance = sum(
        n * (np.diag(row) - np.outer(row, row)) for n, row in zip(counts, rows, strict=True)
    )
    sd = np.sqrt(np.diag(covariance))
    correlation = covariance / np.outer(sd, sd)
    z = NormalDist().inv_cdf(1.0 - ALPHA / (2 * m))
    rng = np.random.default_rng(0)
    factor = np.linalg.cholesky(correlation + np.eye(m) * 1e-12)
    hits = 0
    for _ in range(draws // 500_000):
        sample = rng.standard_normal((500_000, m)) @ factor.T
        hits += int(np.count_nonzero(np.abs(sample).max(axis=1) >= z))
    return hits / (draws // 500_000 * 500_000)


def power_bound(delta: float, std_error: float, tests: int) -> float:
    """Return P(|Z + δ/SE| > z_{1−α/(2·tests)}): Bonferroni's power, a floor for Holm's."""
    z = NormalDist().inv_cdf(1.0 - ALPHA / (2.0 * tests))
    shift = delta / std_error
    normal = NormalDist()
    return normal.cdf(shift - z) + normal.cdf(-shift - z)


def compute(sizes: Sizes, seed: int, show_progress: bool = False) -> list[Row]:
    """Run every (kind, n) of the grid, each from its own stream of the seed."""
    grid = [(kind, n) for kind in KINDS for n in sizes.sizes]
    streams = np.random.SeedSequence(seed).spawn(len(grid))
    return [
        run_one(
            kind,
            n,
            sizes.reps,
            np.random.default_rng(stream),
            sizes.null_reps if kind in sizes.null_kinds else 0,
        )
        for (kind, n), stream in progress(
            zip(grid, streams, strict=True), NAME, show_progress, len(grid)
        )
    ]


def plot(rows: list[Row], path: Path) -> Path:
    """Draw power against n (simulated beside the floor) and the family-wise error."""
    fig, (power_axes, error_axes) = plotting.figure(panels=2, width=6.0, height=4.6)
    for index, kind in enumerate(KINDS):
        mine = [r for r in rows if r.kind == kind]
        sizes, color = [r.n for r in mine], f"C{index}"
        power_axes.plot(
            sizes,
            [r.power_theory for r in mine],
            color=color,
            label=f"{kind}: Bonferroni floor",
            **plotting.THEORY_STYLE,
        )
        power_axes.plot(
            sizes,
            [r.power for r in mine],
            color=color,
            label=f"{kind}: simulated (Holm)",
            **plotting.EMPIRICAL_STYLE,
        )
        error_axes.errorbar(
            sizes,
            [r.fwer_holm for r in mine],
            yerr=[
                [r.fwer_holm - r.fwer_low for r in mine],
                [r.fwer_high - r.fwer_holm for r in mine],
            ],
            color=color,
            capsize=3,
            label=f"{kind}: Holm (exact 95% interval)",
            **plotting.EMPIRICAL_STYLE,
        )
        error_axes.plot(
            sizes,
            [r.fwer_theory for r in mine],
            color=color,
            label=f"{kind}: Holm, normal theory" + (" (Šidák's bound)" if kind == "cms" else ""),
            **plotting.THEORY_STYLE,
        )
        error_axes.plot(
            sizes,
            [r.fwer_uncorrected for r in mine],
            color=color,
            marker="x",
            linestyle="none",
            label=f"{kind}: uncorrected",
        )
    error_axes.axhline(ALPHA, color="black", label=f"α = {ALPHA:g}", **plotting.THEORY_STYLE)
    power_axes.set_title(f"Power on a planted {PLANTED * 100:g}-point difference (ε = {EPSILON:g})")
    power_axes.set_ylabel("share of runs where it is significant")
    error_axes.set_title("Equal slices: any value called significant")
    error_axes.set_yscale("log")
    error_axes.set_ylabel("family-wise false-positive rate")
    for axes in (power_axes, error_axes):
        axes.set_xscale("log")
        axes.set_xlabel("devices per slice (n)")
        axes.grid(True, which="both", alpha=0.3)
        axes.legend(fontsize=7)
    return plotting.save(fig, path)


def table(rows: list[Row]) -> Table:
    """Return the kind × n table."""
    columns = [
        Column("kind", "kind"),
        Column("n", "n per slice", "{:,}"),
        Column("reps", "runs", "{:,}"),
        Column("coverage", "95% interval coverage", "{:.3f}"),
        Column("null_reps", "equal-slice runs", "{:,}"),
        Column("fwer_holm", "FWER, Holm", "{:.4f}"),
        Column("fwer_low", "its exact 95% interval: low", "{:.4f}"),
        Column("fwer_high", "high", "{:.4f}"),
        Column("fwer_theory", "FWER, Holm, normal theory", "{:.4f}"),
        Column("fwer_uncorrected", "FWER, uncorrected", "{:.3f}"),
        Column("power", "power (Holm)", "{:.3f}"),
        Column("power_theory", "Bonferroni floor", "{:.3f}"),
        Column("fwer_planted", "FWER among equal values, planted", "{:.3f}"),
        Column("difference_coverage", "95% difference interval coverage, planted", "{:.3f}"),
    ]
    return Table(
        f"Two slices compared value by value (ε = {EPSILON:g}, α = {ALPHA:g}, d = {len(SHARES)})",
        columns,
        [vars(row) for row in rows],
        notes=f"Shares {list(SHARES)}; planted: value 0 +{PLANTED:g}, value 1 −{PLANTED:g}. "
        "rr asks one yes/no question (value 0 or not): 2 answers. cms: k = 64, m = 1024. "
        "FWER normal theory (fwer_theory): rr α/2; grr from its reports' exact correlation; "
        "cms Šidák's bound 1 − (1 − α/8)^8, whatever the correlation.",
    )


def pooled(rows: list[Row]) -> str:
    """Return the Holm family-wise error over every row's equal-slice runs, with its exact
    95% interval: one rate over all the runs, to read against α beside each row's."""
    runs = sum(row.null_reps for row in rows)
    found = round(sum(row.fwer_holm * row.null_reps for row in rows))
    low, high = clopper_pearson(found, runs)
    return (
        f"FWER after Holm over every row's {runs:,} runs of equal slices: "
        f"{found / runs:.4f} (exact 95% interval {low:.4f}–{high:.4f}; α = {ALPHA:g})"
    )


def run(settings: RunSettings) -> list[Path]:
    """Compute, plot and tabulate; print the table; return the files written."""
    rows = compute(QUICK if settings.quick else FULL, settings.seed, settings.show_progress)
    folder = settings.folder(NAME)
    result = table(rows)
    print(result.markdown())
    print(pooled(rows))
    sizes = QUICK_PERIODS if settings.quick else FULL_PERIODS
    longitudinal = periods.table(periods.compute(*sizes, settings.seed))
    print(longitudinal.markdown())
    return [
        plot(rows, folder / f"{NAME}.png"),
        *result.write(folder, NAME),
        *longitudinal.write(folder, f"{NAME}_periods"),
    ]
