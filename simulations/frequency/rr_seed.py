"""The seeds' worked example: randomized response with alpha = beta = 1/2.

1000 people answer; 400 say yes. A truthful yes happens with probability 1/2 and a random
yes with 1/4, so E[yes share] = π/2 + 1/4 and π̂ = (0.4 − 0.25)/0.5 = 30%. shared's
estimator gives the interval, with the variance of the count for the people who answered,
n·[π P11(1−P11) + (1−π) P10(1−P10)]/α² = 750 here (SE 2.7 points). If the 1000 people are a
random sample of a larger population the sampling variance n·λ(1−λ)/α² = 960 applies
instead (SE 3.1 points), and the interval covers the population's share less often.
Both are simulated with the real mechanism.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ldp_telemetry.shared import Estimates, RandomizedResponse
from ldp_telemetry.shared.accuracy import rr_count_variance, rr_sampling_variance
from simulations.common import plotting, stats
from simulations.common.settings import RunSettings, progress
from simulations.common.tables import Column, Table

NAME = "rr_seed"
SUMMARY = (
    "the seeds' example: RR with alpha = beta = 1/2, 1000 answers, 400 yes -> 30%, "
    "its 95% interval, and a simulation of the estimator's spread and coverage"
)
ANSWERS, YES, TRUE_SHARE = 1000, 400, 0.3
TRUE_YES = round(TRUE_SHARE * ANSWERS)  # the simulated people: 300 of 1000 hold yes


@dataclass(frozen=True)
class Sizes:
    """Number of simulated surveys of 1000 people."""

    surveys: int


QUICK, FULL = Sizes(surveys=3_000), Sizes(surveys=50_000)


@dataclass(frozen=True)
class Result:
    """The worked example, the closed-form SEs and the simulated surveys."""

    example: Estimates
    fixed_se: float
    sampled_se: float
    fixed_shares: np.ndarray
    fixed_coverage: float
    sampled_shares: np.ndarray
    sampled_coverage: float


def worked_example(rr: RandomizedResponse) -> Estimates:
    """Return the estimated share of yes for 1000 answers of which 400 are yes."""
    sums = rr.new_sums()
    sums.load(np.array([ANSWERS]), np.array([[YES]]))
    return rr.estimate(sums, candidates=(True,)).proportions()


def compute(sizes: Sizes, rng: np.random.Generator, show_progress: bool = False) -> Result:
    """Run the example, then simulate surveys of a fixed and of a sampled population."""
    rr = RandomizedResponse(alpha=0.5, beta=0.5)
    fixed = np.arange(ANSWERS) < TRUE_YES
    surveys = {"fixed": [], "sampled": []}  # type: dict[str, list[Estimates]]
    for _ in progress(range(sizes.surveys), "rr_seed surveys", show_progress):
        for kind, truth in (("fixed", fixed), ("sampled", rng.random(ANSWERS) < TRUE_SHARE)):
            sums = rr.new_sums()
            sums.add_many(rr.privatize_many(truth, rng))
            surveys[kind].append(rr.estimate(sums, candidates=(True,)).proportions())
    return Result(
        example=worked_example(rr),
        fixed_se=math.sqrt(float(rr_count_variance(ANSWERS, TRUE_YES, rr.p11, rr.p10))) / ANSWERS,
        sampled_se=math.sqrt(rr_sampling_variance(ANSWERS, TRUE_SHARE, rr.p11, rr.p10)) / ANSWERS,
        fixed_shares=np.array([e.estimate[0] for e in surveys["fixed"]]),
        fixed_coverage=_coverage(surveys["fixed"]),
        sampled_shares=np.array([e.estimate[0] for e in surveys["sampled"]]),
        sampled_coverage=_coverage(surveys["sampled"]),
    )


def _coverage(estimates: list[Estimates]) -> float:
    return stats.coverage(
        np.array([e.ci_low[0] for e in estimates]),
        np.array([e.ci_high[0] for e in estimates]),
        TRUE_SHARE,
    )


def plot(result: Result, path: Path) -> Path:
    """Draw the simulated estimates as histograms beside the normal laws of the theory."""
    fig, (axes,) = plotting.figure(width=8.0, height=5.0)
    grid = np.linspace(0.15, 0.45, 400)
    # π̂ moves in steps of 0.002: bins 0.01 wide and off the lattice hold 5 values each.
    edges = [float(e) for e in np.arange(0.151, 0.45, 0.01)]
    for shares, se, color, label in (
        (result.fixed_shares, result.fixed_se, "C0", "these 1000 people"),
        (result.sampled_shares, result.sampled_se, "C1", "1000 sampled from a population"),
    ):
        axes.hist(
            shares,
            bins=edges,
            density=True,
            histtype="step",
            color=color,
            label=f"simulated, {label}",
        )
        density = np.exp(-0.5 * ((grid - TRUE_SHARE) / se) ** 2) / (se * math.sqrt(2 * math.pi))
        axes.plot(
            grid, density, color=color, label=f"theory N(0.30, {se:.4f}²)", **plotting.THEORY_STYLE
        )
    example = result.example
    axes.axvspan(
        example.ci_low[0],
        example.ci_high[0],
        color="grey",
        alpha=0.15,
        label=f"95% interval of the example [{example.ci_low[0]:.3f}, {example.ci_high[0]:.3f}]",
    )
    axes.axvline(
        example.estimate[0], color="black", linestyle="--", label="example: 400 yes of 1000 → 0.30"
    )
    axes.set_xlabel("estimated share of yes π̂")
    axes.set_ylabel("probability density")
    axes.set_title("Randomized response, α = β = 1/2 (ε = ln 3)")
    axes.legend(fontsize=8, loc="upper right")
    return plotting.save(fig, path)


def table(result: Result) -> Table:
    """Return the example's numbers beside the simulated spread and coverage."""
    example = result.example
    rows = [
        ("estimate π̂ from 400 yes of 1000", example.estimate[0]),
        ("standard error (these 1000 people)", example.std_error[0]),
        ("95% interval low", example.ci_low[0]),
        ("95% interval high", example.ci_high[0]),
        ("simulated SD of π̂, these 1000 people (300 yes)", float(result.fixed_shares.std())),
        ("theory SD, these 1000 people", result.fixed_se),
        ("simulated coverage of the 95% interval, these people", result.fixed_coverage),
        ("simulated SD of π̂, 1000 sampled at π = 0.3", float(result.sampled_shares.std())),
        ("theory SD, sampled: √(n·λ(1−λ))/(α·n)", result.sampled_se),
        ("simulated coverage of the 95% interval, sampled", result.sampled_coverage),
    ]
    return Table(
        "The seeds' randomized response example (α = β = 1/2)",
        [Column("quantity", "quantity"), Column("value", "value", "{:.4f}")],
        [{"quantity": q, "value": float(v)} for q, v in rows],
    )


def run(settings: RunSettings) -> list[Path]:
    """Compute, plot and tabulate; return the files written."""
    result = compute(QUICK if settings.quick else FULL, settings.rng(), settings.show_progress)
    folder = settings.folder(NAME)
    return [plot(result, folder / f"{NAME}.png"), *table(result).write(folder, NAME)]
