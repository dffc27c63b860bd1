"""What shuffling buys: the central ε of n shuffled ε₀-LDP reports, bound and floor.

The accountant (ldp_telemetry.shared.shuffling.accountant) gives an upper bound: the stronger clone
bound of a generic ε₀-LDP randomizer (Feldman, McMillan, Talwar 2023) and the
mechanism-aware variation-ratio bound (Wang et al. 2023) of each registered kind that
fits a 256-value workload. Beside it, a floor: the exact central ε of shuffled binary
randomized response when every other device holds the same value (a worst case the bound
must cover), computed from the exact distribution of the number of 1s the collector sees.
The true ε of shuffled randomized response lies between the two.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.optimize import brentq
from scipy.stats import binom

from ldp_telemetry.shared.mechanisms.registry import params_class, plan
from ldp_telemetry.shared.shuffling.accountant import central_epsilon
from ldp_telemetry.shared.shuffling.amplification import reduction_of, stronger_clone
from simulations.common import plotting
from simulations.common.settings import RunSettings, progress
from simulations.common.tables import Column, Table

NAME = "shuffle"
SUMMARY = (
    "central epsilon of n shuffled eps0-LDP reports: the stronger-clone bound, each "
    "kind's variation-ratio bound, and the exact floor of shuffled binary RR"
)
DELTA = 1e-8
DOMAIN = 256  # the workload the mechanism-aware rows are planned for


@dataclass(frozen=True)
class Sizes:
    """Local epsilons and batch sizes of the grid."""

    epsilons: tuple[float, ...]
    sizes: tuple[int, ...]


QUICK = Sizes(epsilons=(1.0, 4.0), sizes=(1_000, 10_000, 100_000))
FULL = Sizes(
    epsilons=(0.5, 1.0, 2.0, 4.0, 8.0),
    sizes=(1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000),
)


@dataclass(frozen=True)
class Row:
    """One (ε₀, n): the generic bound, the RR floor, and each kind's bound."""

    epsilon0: float
    n: int
    bound: float
    floor: float
    seconds: float  # time of the generic bound's evaluation (a shared, loaded machine)
    kinds: dict[str, float]


def rr_floor(epsilon0: float, n: int, delta: float) -> float:
    """Return the exact central ε of n shuffled binary RR reports, others all alike."""
    flip = 1.0 / (1.0 + math.exp(epsilon0))
    others = n - 1
    reach = 10.0 * math.sqrt(others * flip * (1.0 - flip)) + 10.0
    k = np.arange(max(0, math.floor(others * flip - reach)), math.ceil(others * flip + reach) + 2)
    below, at = binom.pmf(k - 1, others, flip), binom.pmf(k, others, flip)
    one = (1.0 - flip) * below + flip * at  # P(k ones) when the victim holds 1
    zero = flip * below + (1.0 - flip) * at  # ... and when it holds 0

    def excess(epsilon: float) -> float:
        e = math.exp(epsilon)
        worst = max(np.maximum(one - e * zero, 0).sum(), np.maximum(zero - e * one, 0).sum())
        return float(worst) - delta

    if excess(0.0) <= 0.0:
        return 0.0
    if excess(epsilon0) > 0.0:
        return epsilon0
    return float(brentq(excess, 0.0, epsilon0, xtol=1e-12, rtol=1e-6))


def kind_bounds(epsilon0: float, n: int) -> dict[str, float]:
    """Return the variation-ratio bound of every kind planned for the workload."""
    bounds = {}
    for name, planned in plan(epsilon0, DOMAIN, n):
        kind = params_class(name)
        fields = {key: _filled(value) for key, value in planned.fields.items()}
        mechanism = kind.from_fields(kind.defaults_for_new_task(fields)).build()
        bounds[name] = central_epsilon(reduction_of(mechanism), n, DELTA)
    return bounds


def _filled(value: object) -> object:
    """Return a plan's placeholder for the user's values ("<your 256 values>") filled in."""
    if isinstance(value, str) and value.startswith("<your"):
        return [str(i) for i in range(DOMAIN)]
    return value


def compute(sizes: Sizes, show_progress: bool = False) -> list[Row]:
    """Evaluate the bounds and the floor over the grid."""
    rows = []
    grid = [(e, n) for e in sizes.epsilons for n in sizes.sizes]
    for epsilon0, n in progress(grid, NAME, show_progress):
        started = time.perf_counter()
        bound = central_epsilon(stronger_clone(epsilon0), n, DELTA)
        seconds = time.perf_counter() - started
        floor = rr_floor(epsilon0, n, DELTA)
        rows.append(Row(epsilon0, n, bound, floor, seconds, kind_bounds(epsilon0, n)))
    return rows


def plot(rows: list[Row], path: Path) -> Path:
    """Draw central ε against n per ε₀: the generic bound, and the RR floor beneath it."""
    fig, (axes,) = plotting.figure(width=8.0, height=5.2)
    for index, epsilon0 in enumerate(sorted({r.epsilon0 for r in rows})):
        mine = [r for r in rows if r.epsilon0 == epsilon0]
        sizes = [r.n for r in mine]
        color = f"C{index}"
        axes.plot(
            sizes,
            [r.bound for r in mine],
            color=color,
            label=f"ε₀ = {epsilon0:g}: stronger-clone bound",
            **plotting.THEORY_STYLE,
        )
        axes.plot(sizes, [r.floor for r in mine], color=color, **plotting.EMPIRICAL_STYLE)
    axes.plot([], [], color="black", **plotting.EMPIRICAL_STYLE, label="exact shuffled RR (floor)")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("reports shuffled together (n)")
    axes.set_ylabel(f"central ε at δ = {DELTA:g}")
    axes.set_title("Central ε of n shuffled ε₀-LDP reports")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8)
    return plotting.save(fig, path)


def table(rows: list[Row]) -> Table:
    """Return the ε₀ × n table: bound, floor, each kind's bound and the evaluation time."""
    kinds = sorted({name for r in rows for name in r.kinds})
    columns = [
        Column("epsilon0", "ε₀", "{:g}"),
        Column("n", "n", "{:,}"),
        Column("bound", "stronger clone", "{:.4g}"),
        *(Column(name, f"{name} (d={DOMAIN})", "{:.4g}") for name in kinds),
        Column("floor", "exact RR floor", "{:.4g}"),
        Column("seconds", "bound's time (s)", "{:.2f}"),
    ]
    flat = [{**{k: v for k, v in vars(r).items() if k != "kinds"}, **r.kinds} for r in rows]
    return Table(
        f"Central ε of n shuffled ε₀-LDP reports (δ = {DELTA:g})",
        columns,
        flat,
        notes="Upper bounds (stronger clone; each kind's variation-ratio bound) beside the "
        "exact floor of shuffled binary RR. Times on a shared, loaded machine.",
    )


def run(settings: RunSettings) -> list[Path]:
    """Compute, plot and tabulate; print the table; return the files written."""
    rows = compute(QUICK if settings.quick else FULL, settings.show_progress)
    folder = settings.folder(NAME)
    result = table(rows)
    print(result.markdown())
    return [plot(rows, folder / f"{NAME}.png"), *result.write(folder, NAME)]
