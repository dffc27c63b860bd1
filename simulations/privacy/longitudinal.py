"""Longitudinal privacy: what an attacker learns from one device's repeated reports.

Part 1, the attacker. One device holds "yes" and reports it again and again (one report
per period). The attacker knows the mechanism and computes the exact posterior that the
value is yes (prior 1/2) from all the reports seen so far:

- without the option, each report is a fresh rr report at ε₁, so the log-likelihood ratio
  grows with every report and the posterior goes to 1;
- with ``longitudinal`` (permanent response at ε∞ re-randomized at ε₁ per report) the
  reports reveal at most the permanent response, so the posterior can never pass
  e^ε∞/(1+e^ε∞) — however many reports.

Part 2, accuracy. For rr, grr, cms and hcms with a reference option (ε∞ = 4, flip
0.1), populations of fresh devices: the simulated standard deviation of one value's
estimate beside the estimator's closed-form standard error, and the variance against
one fresh report at ε∞ (closed form and simulated).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ldp_telemetry.shared import (
    CountMeanSketch,
    GeneralizedRandomizedResponse,
    HadamardCountMeanSketch,
    RandomizedResponse,
)
from ldp_telemetry.shared.mechanisms.longitudinal import Longitudinal, LongitudinalSpec
from simulations.common import plotting
from simulations.common.settings import RunSettings, progress
from simulations.common.tables import Column, Table

NAME = "longitudinal"
SUMMARY = (
    "permanent + instantaneous randomization: an attacker's posterior from one device's "
    "repeated reports with and without it, and estimator accuracy against the closed form"
)
ATTACK = (1.0, 0.2)  # ε∞, flip of the attacker part
REFERENCE = (4.0, 0.1)  # the reference option: ε₁ = 2.83 for cms
CHECKPOINTS = np.unique(np.logspace(0, 3, 25).astype(int))  # reports seen: 1 … 1000


@dataclass(frozen=True)
class Sizes:
    """Devices attacked, and populations × devices of the accuracy part."""

    devices: int
    populations: int
    population: int


QUICK, FULL = Sizes(400, 30, 5_000), Sizes(4_000, 200, 50_000)


def attack(devices: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Return the mean posterior of the true value (yes) after each checkpoint's reports."""
    epsilon_inf, flip = ATTACK
    option = Longitudinal(
        RandomizedResponse(epsilon=epsilon_inf), LongitudinalSpec(epsilon_inf, flip=flip), "rr"
    )
    fresh = RandomizedResponse(epsilon=option.effective_epsilon)  # the same ε per report
    last = int(CHECKPOINTS[-1])
    truth = np.ones(devices, dtype=bool)
    permanent = option.permanent.privatize_many(truth, rng)  # one per device
    repeated = np.repeat(permanent, last)
    with_option = option.permanent.reflip_many(repeated, option.threshold, rng)
    without = fresh.privatize_many(np.ones(devices * last, dtype=bool), rng)
    instant: Any = option.instant
    prr: Any = option.permanent
    return {
        "with": _posterior_with(with_option.reshape(devices, last), prr, instant, option),
        "without": _posterior_fresh(without.reshape(devices, last), fresh),
    }


def _posterior_fresh(reports: np.ndarray, rr: RandomizedResponse) -> np.ndarray:
    """Mean posterior of yes when every report is a fresh rr report (prior 1/2)."""
    ones = np.cumsum(reports, axis=1)[:, CHECKPOINTS - 1]
    zeros = CHECKPOINTS - ones
    log_ratio = ones * math.log(rr.p11 / rr.p10) + zeros * math.log((1 - rr.p11) / (1 - rr.p10))
    return _sigmoid(log_ratio).mean(axis=0)


def _posterior_with(
    reports: np.ndarray, prr: Any, instant: Any, option: Longitudinal
) -> np.ndarray:
    """Mean posterior of yes from reports of one permanent answer re-randomized (prior 1/2).

    P(reports | v) = Σ_b P(prr = b | v) · keep^agree(b) · flip^(T − agree(b)).
    """
    flip = float(option.flip)
    ones = np.cumsum(reports, axis=1)[:, CHECKPOINTS - 1].astype(float)
    zeros = CHECKPOINTS - ones
    given_one = ones * math.log(1 - flip) + zeros * math.log(flip)  # log P(reports | prr = 1)
    given_zero = ones * math.log(flip) + zeros * math.log(1 - flip)
    yes = np.logaddexp(math.log(prr.p11) + given_one, math.log(1 - prr.p11) + given_zero)
    no = np.logaddexp(math.log(prr.p10) + given_one, math.log(1 - prr.p10) + given_zero)
    return _sigmoid(yes - no).mean(axis=0)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.asarray(0.5 * (1 + np.tanh(0.5 * x)))


def _kinds() -> dict[str, tuple[Any, list[Any]]]:
    """Return each kind's permanent-layer builder and the population's values."""
    words = [f"w{i}" for i in range(8)]
    return {
        "rr": (lambda eps: RandomizedResponse(epsilon=eps), [True, False]),
        "grr": (lambda eps: GeneralizedRandomizedResponse(epsilon=eps, domain=words), words),
        "cms": (lambda eps: CountMeanSketch(epsilon=eps, k=256, m=256, hash_seed=7), words),
        "hcms": (
            lambda eps: HadamardCountMeanSketch(epsilon=eps, k=256, m=256, hash_seed=7),
            words,
        ),
    }


def accuracy(sizes: Sizes, rng: np.random.Generator, show: bool) -> list[dict[str, Any]]:
    """Return, per kind, one value's simulated SD and closed-form SE, with and without."""
    epsilon_inf, flip = REFERENCE
    rows = []
    for kind, (build, values) in _kinds().items():
        option = Longitudinal(build(epsilon_inf), LongitudinalSpec(epsilon_inf, flip=flip), kind)
        plain = build(epsilon_inf)
        share = np.array([0.3] + [0.7 / (len(values) - 1)] * (len(values) - 1))
        truth = list(rng.choice(np.array(values, dtype=object), sizes.population, p=share))
        candidates = None if kind == "rr" else values[:1]
        found: dict[str, list[float]] = {"with": [], "without": []}
        claimed: dict[str, list[float]] = {"with": [], "without": []}
        for _ in progress(range(sizes.populations), f"longitudinal {kind}", show):
            for label, mechanism in (("with", option), ("without", plain)):
                sums = mechanism.new_sums()
                sums.add_many(mechanism.privatize_many(truth, rng))
                estimate = mechanism.estimate(sums, candidates)
                found[label].append(float(estimate.estimate[0]))
                claimed[label].append(float(estimate.std_error[0]))
        sd = {label: float(np.std(found[label], ddof=1)) for label in found}
        se = {label: float(np.mean(claimed[label])) for label in claimed}
        rows.append(
            {
                "kind": kind,
                "epsilon_inf": option.effective_epsilon_inf,
                "epsilon_1": option.effective_epsilon,
                "sd": sd["with"],
                "se": se["with"],
                "sd_over_se": sd["with"] / se["with"],
                "ratio_theory": (se["with"] / se["without"]) ** 2,
                "ratio_simulated": (sd["with"] / sd["without"]) ** 2,
            }
        )
    return rows


def plot(posteriors: dict[str, np.ndarray], path: Path) -> Path:
    """Draw the attacker's mean posterior of the true value against reports seen."""
    epsilon_inf, flip = ATTACK
    fig, (axes,) = plotting.figure(width=7.5, height=4.6)
    axes.plot(CHECKPOINTS, posteriors["without"], "o-", label="fresh report each period (ε₁)")
    axes.plot(CHECKPOINTS, posteriors["with"], "s-", label=f"longitudinal (ε∞ = {epsilon_inf:g})")
    bound = math.exp(epsilon_inf) / (1 + math.exp(epsilon_inf))
    axes.axhline(bound, color="grey", linestyle="--", label=f"e^ε∞/(1+e^ε∞) = {bound:.3f}")
    axes.set_xscale("log")
    axes.set_ylim(0.45, 1.02)
    axes.set_xlabel("reports of the same value seen by the attacker")
    axes.set_ylabel("attacker's mean posterior of the true value")
    axes.set_title(f"One device, the same value every period (rr, flip {flip:g} per report)")
    axes.legend(fontsize=8, loc="center right")
    return plotting.save(fig, path)


def table(rows: list[dict[str, Any]], posteriors: dict[str, np.ndarray], sizes: Sizes) -> Table:
    """Return the accuracy rows and, in the notes, the attacker's posteriors."""
    after = {int(t): i for i, t in enumerate(CHECKPOINTS)}
    notes = (
        f"ε∞ = {REFERENCE[0]:g}, flip {REFERENCE[1]:g}; {sizes.populations} populations of "
        f"{sizes.population:,} devices, one value held by 30 %. Attacker (rr, ε∞ = "
        f"{ATTACK[0]:g}, flip {ATTACK[1]:g}): mean posterior of the true value after 10 / 100 / "
        f"1000 reports: fresh {posteriors['without'][after[10]]:.3f} / "
        f"{posteriors['without'][after[100]]:.3f} / {posteriors['without'][after[1000]]:.3f}, "
        f"longitudinal {posteriors['with'][after[10]]:.3f} / {posteriors['with'][after[100]]:.3f}"
        f" / {posteriors['with'][after[1000]]:.3f}."
    )
    return Table(
        "Longitudinal tasks: one value's estimate, simulated against the closed form",
        [
            Column("kind", "kind"),
            Column("epsilon_inf", "ε∞", "{:.3f}"),
            Column("epsilon_1", "ε₁", "{:.3f}"),
            Column("sd", "simulated SD", "{:,.1f}"),
            Column("se", "closed-form SE", "{:,.1f}"),
            Column("sd_over_se", "SD / SE", "{:.3f}"),
            Column("ratio_theory", "variance × vs ε∞ (theory)", "{:.3f}"),
            Column("ratio_simulated", "variance × vs ε∞ (simulated)", "{:.3f}"),
        ],
        rows,
        notes=notes,
    )


def run(settings: RunSettings) -> list[Path]:
    """Compute, plot and tabulate; return the files written."""
    sizes = QUICK if settings.quick else FULL
    rng = settings.rng()
    posteriors = attack(sizes.devices, rng)
    rows = accuracy(sizes, rng, settings.show_progress)
    folder = settings.folder(NAME)
    return [
        plot(posteriors, folder / f"{NAME}.png"),
        *table(rows, posteriors, sizes).write(folder, NAME),
    ]
