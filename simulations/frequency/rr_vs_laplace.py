"""Randomized response against the Laplace mechanism for one count, at epsilon = ln 3.

Local model (RR, the seeds' alpha = beta = 1/2): every respondent's answer carries its own
noise, so the error of the estimated count grows like √n. Central model (Laplace, Dwork et
al. 2006): a trusted curator adds one Laplace(1/ε) draw to the exact count, so the error is
√2/ε whatever n is. The RR counts are drawn exactly with simulations.common.sampler and debiased by
shared's estimator; the Laplace noise is simulated with a numpy Generator.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ldp_telemetry.shared import RandomizedResponse
from ldp_telemetry.shared.accuracy import rr_count_variance
from simulations.common import plotting, stats
from simulations.common.sampler import sample_rr_sums
from simulations.common.settings import RunSettings, progress
from simulations.common.tables import Column, Table
from simulations.common.theory import laplace_count_sd

NAME = "rr_vs_laplace"
SUMMARY = (
    "count error of randomized response (grows like sqrt(n)) against the central "
    "Laplace mechanism (constant), both at epsilon = ln 3"
)


@dataclass(frozen=True)
class Sizes:
    """Respondent counts swept, repetitions per count and the true proportion of yes."""

    ns: tuple[int, ...]
    reps: int
    proportion: float = 0.3


QUICK = Sizes(ns=(100, 1_000, 10_000, 100_000), reps=1_000)
FULL = Sizes(ns=tuple(round(10**e) for e in np.arange(2.0, 7.01, 0.5)), reps=5_000)


@dataclass(frozen=True)
class Result:
    """Empirical and theoretical SD of the count error, per n, for both mechanisms."""

    epsilon: float
    ns: np.ndarray
    rr_sd: np.ndarray
    rr_theory: np.ndarray
    laplace_sd: np.ndarray
    laplace_theory: float

    def slopes(self) -> tuple[float, float]:
        """Return the fitted powers of n of the RR and the Laplace error."""
        return stats.log_slope(self.ns, self.rr_sd), stats.log_slope(self.ns, self.laplace_sd)


def compute(sizes: Sizes, rng: np.random.Generator, show_progress: bool = False) -> Result:
    """Repeat both mechanisms ``sizes.reps`` times at every n; measure the count error."""
    rr = RandomizedResponse(alpha=0.5, beta=0.5)
    epsilon = rr.effective_epsilon  # ln 3 exactly: both mechanisms get the same budget
    rr_sd, rr_theory, laplace_sd = [], [], []
    for n in progress(sizes.ns, "rr_vs_laplace n", show_progress):
        yes = round(n * sizes.proportion)
        errors = [
            rr.estimate(sample_rr_sums(rr, yes, n - yes, rng)).estimate[0] - yes
            for _ in range(sizes.reps)
        ]
        rr_sd.append(stats.rmse(np.array(errors)))
        rr_theory.append(float(np.sqrt(rr_count_variance(n, yes, rr.p11, rr.p10))))
        laplace_sd.append(stats.rmse(rng.laplace(0.0, 1.0 / epsilon, sizes.reps)))
    return Result(
        epsilon,
        np.array(sizes.ns),
        np.array(rr_sd),
        np.array(rr_theory),
        np.array(laplace_sd),
        laplace_count_sd(epsilon),
    )


def plot(result: Result, path: Path) -> Path:
    """Draw the count error (left) and the proportion error (right) against n, log-log."""
    fig, (counts, shares) = plotting.figure(panels=2)
    ns = result.ns
    laplace_theory = np.full(len(ns), result.laplace_theory)
    for axes, scale in ((counts, np.ones(len(ns))), (shares, 1.0 / ns)):
        axes.loglog(
            ns, result.rr_theory * scale, color="C0", label="RR theory", **plotting.THEORY_STYLE
        )
        axes.loglog(
            ns, result.rr_sd * scale, color="C0", label="RR simulated", **plotting.EMPIRICAL_STYLE
        )
        axes.loglog(
            ns,
            laplace_theory * scale,
            color="C3",
            label="Laplace theory √2/ε",
            **plotting.THEORY_STYLE,
        )
        axes.loglog(
            ns,
            result.laplace_sd * scale,
            color="C3",
            label="Laplace simulated",
            marker="s",
            linestyle="none",
            markerfacecolor="none",
        )
        axes.set_xlabel("n (respondents)")
        axes.grid(True, which="both", alpha=0.3)
        axes.legend()
    rr_slope, laplace_slope = (round(s, 2) + 0.0 for s in result.slopes())  # no "-0.00"
    counts.set_ylabel("standard deviation of the estimated count")
    counts.set_title(
        f"Count error, ε = ln 3: RR ∝ n^{rr_slope:.2f}, Laplace ∝ n^{laplace_slope:.2f}"
    )
    shares.set_ylabel("standard deviation of the estimated proportion")
    shares.set_title("Proportion error: RR ∝ 1/√n, Laplace ∝ 1/n")
    return plotting.save(fig, path)


def table(result: Result) -> Table:
    """Return one row per n with both mechanisms' empirical and theoretical SD."""
    columns = [
        Column("n", "n", "{:,}"),
        Column("rr_sd", "RR SD (sim)", "{:.1f}"),
        Column("rr_theory", "RR SD (theory)", "{:.1f}"),
        Column("laplace_sd", "Laplace SD (sim)", "{:.3f}"),
        Column("laplace_theory", "Laplace SD (theory)", "{:.3f}"),
    ]
    rows = [
        {
            "n": int(n),
            "rr_sd": rs,
            "rr_theory": rt,
            "laplace_sd": ls,
            "laplace_theory": result.laplace_theory,
        }
        for n, rs, rt, ls in zip(
            result.ns, result.rr_sd, result.rr_theory, result.laplace_sd, strict=True
        )
    ]
    return Table(f"Count error at ε = ln 3 = {result.epsilon:.4f}", columns, rows)


def run(settings: RunSettings) -> list[Path]:
    """Compute, plot and tabulate; return the files written."""
    result = compute(QUICK if settings.quick else FULL, settings.rng(), settings.show_progress)
    folder = settings.folder(NAME)
    return [plot(result, folder / f"{NAME}.png"), *table(result).write(folder, NAME)]
