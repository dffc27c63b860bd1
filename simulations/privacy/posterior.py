"""The attacker's posterior after seeing one answer: the Bayesian reading of epsilon.

An attacker who believes P(secret = 1) = π before seeing an ε-LDP report can, after any
report, believe at most e^ε·π/(e^ε·π + 1 − π) and at least π/(π + e^ε·(1 − π))
(simulations/common/theory.py). Randomized response built from ε meets both bounds exactly: a
"yes" moves the attacker to the upper bound and a "no" to the lower one. The simulation
draws secrets with prior π, privatizes them with shared's RandomizedResponse, and measures
the fraction of secrets equal to 1 among the people who answered yes (and no).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ldp_telemetry.shared import RandomizedResponse
from simulations.common import plotting
from simulations.common.settings import RunSettings, progress
from simulations.common.tables import Column, Table
from simulations.common.theory import posterior_bounds, rr_posterior

NAME = "posterior"
SUMMARY = (
    "the attacker's posterior P(secret | answer) against the prior, with the e^epsilon "
    "bounds, for several epsilons; empirical RR posteriors drawn on the bounds"
)


@dataclass(frozen=True)
class Sizes:
    """Epsilons, priors and the number of simulated people per (epsilon, prior)."""

    epsilons: tuple[float, ...]
    priors: tuple[float, ...]
    people: int


QUICK = Sizes(epsilons=(0.5, math.log(3), 3.0), priors=(0.05, 0.2, 0.5, 0.8, 0.95), people=20_000)
FULL = Sizes(
    epsilons=(0.25, 0.5, 1.0, math.log(3), 2.0, 3.0),
    priors=tuple(np.round(np.linspace(0.02, 0.98, 13), 2)),
    people=200_000,
)


@dataclass(frozen=True)
class Row:
    """One (epsilon, prior): the bounds, the exact RR posteriors and the simulated ones."""

    epsilon: float
    prior: float
    bound_low: float
    bound_high: float
    exact_yes: float
    exact_no: float
    empirical_yes: float
    empirical_no: float
    answered_yes: int
    answered_no: int


def compute(sizes: Sizes, rng: np.random.Generator, show_progress: bool = False) -> list[Row]:
    """Simulate ``sizes.people`` secrets and RR answers for every (epsilon, prior)."""
    rows = []
    grid = [(e, p) for e in sizes.epsilons for p in sizes.priors]
    for epsilon, prior in progress(grid, "posterior", show_progress):
        rr = RandomizedResponse(epsilon=epsilon)
        secrets = rng.random(sizes.people) < prior
        said_yes = rr.privatize_many(secrets, rng) == 1
        low, high = posterior_bounds(np.array(prior), rr.effective_epsilon)
        rows.append(
            Row(
                epsilon=rr.effective_epsilon,
                prior=prior,
                bound_low=float(low),
                bound_high=float(high),
                exact_yes=float(rr_posterior(np.array(prior), rr.p11, rr.p10, 1)),
                exact_no=float(rr_posterior(np.array(prior), rr.p11, rr.p10, 0)),
                empirical_yes=float(secrets[said_yes].mean()),
                empirical_no=float(secrets[~said_yes].mean()),
                answered_yes=int(said_yes.sum()),
                answered_no=int((~said_yes).sum()),
            )
        )
    return rows


NO_STYLE = {**plotting.EMPIRICAL_STYLE, "marker": "v"}  # posteriors after a "no"


def plot(rows: list[Row], path: Path) -> Path:
    """Draw, per epsilon, the band the bounds allow and the simulated posteriors on it."""
    fig, (axes,) = plotting.figure(width=9.5, height=6.0)
    fine = np.linspace(0.001, 0.999, 400)
    axes.plot(fine, fine, color="grey", linestyle=":", label="no information (ε = 0)")
    for index, epsilon in enumerate(sorted({r.epsilon for r in rows})):
        _draw_epsilon(axes, [r for r in rows if r.epsilon == epsilon], fine, f"C{index}")
    axes.plot([], [], color="black", **plotting.EMPIRICAL_STYLE, label="simulated RR, answer yes")
    axes.plot([], [], color="black", **NO_STYLE, label="simulated RR, answer no")
    axes.set_xlabel("attacker's prior P(secret = 1)")
    axes.set_ylabel("attacker's posterior P(secret = 1 | answer)")
    axes.set_title("What one ε-LDP answer can teach an attacker")
    axes.set_xlim(0, 1)
    axes.set_ylim(0, 1)
    axes.grid(True, alpha=0.3)
    axes.legend(loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=9)
    return plotting.save(fig, path)


def _draw_epsilon(axes: plotting.Axes, rows: list[Row], fine: np.ndarray, color: str) -> None:
    epsilon = rows[0].epsilon
    low, high = posterior_bounds(fine, epsilon)
    axes.fill_between(fine, low, high, color=color, alpha=0.08)
    axes.plot(
        fine,
        high,
        color=color,
        label=f"bounds, ε = {_epsilon_label(epsilon)}",
        **plotting.THEORY_STYLE,
    )
    axes.plot(fine, low, color=color, **plotting.THEORY_STYLE)
    priors = [r.prior for r in rows]
    axes.plot(priors, [r.empirical_yes for r in rows], color=color, **plotting.EMPIRICAL_STYLE)
    axes.plot(priors, [r.empirical_no for r in rows], color=color, **NO_STYLE)


def _epsilon_label(epsilon: float) -> str:
    return "ln 3" if math.isclose(epsilon, math.log(3)) else f"{epsilon:.2f}"


def table(rows: list[Row]) -> Table:
    """Return the bounds beside the simulated posteriors, one row per (epsilon, prior)."""
    columns = [
        Column("epsilon", "ε", "{:.3f}"),
        Column("prior", "prior", "{:.2f}"),
        Column("bound_low", "lower bound", "{:.4f}"),
        Column("empirical_no", "sim. after no", "{:.4f}"),
        Column("empirical_yes", "sim. after yes", "{:.4f}"),
        Column("bound_high", "upper bound", "{:.4f}"),
        Column("answered_no", "answered no", "{:,}"),
        Column("answered_yes", "answered yes", "{:,}"),
    ]
    return Table(
        "Attacker's posterior P(secret = 1 | answer) under randomized response",
        columns,
        [vars(r) for r in rows],
    )


def run(settings: RunSettings) -> list[Path]:
    """Compute, plot and tabulate; return the files written."""
    rows = compute(QUICK if settings.quick else FULL, settings.rng(), settings.show_progress)
    folder = settings.folder(NAME)
    return [plot(rows, folder / f"{NAME}.png"), *table(rows).write(folder, NAME)]
