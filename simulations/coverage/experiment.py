"""Do the collector's intervals mean what they say? Coverage of every kind's answers.

For every registered kind × 2–4 settings × populations (:mod:`simulations.coverage.cases`)
the real code runs many times over one fixed population: ``privatize_many`` on the
devices' values, the mechanism's integer sums, then its public ``estimate`` (the one the
collector calls; longitudinal answers over several buckets also go through
``over_buckets``, as the collector's do). Each repetition draws a fresh hash seed, as a new
task would. Per answer and repetition: z = (estimate − truth)/SE and whether the
interval holds the truth. Per row:

- ``mean z``: the mean of z over repetitions and answers; ``max |z̄|`` the largest
  |mean z| of one answer over the repetitions (bias in SE units: what the target bounds;
  pooled, rr's yes and no cancel);
- ``SE/SD``: the root mean square SE over the estimates' SD across repetitions (pooled
  over answers; 1 when the SE is honest);
- ``coverage``: the share of 95 % intervals that hold the truth (pooled; ``min`` the worst
  answer's), and the share of answers flagged unreliable when the estimates carry a flag;
- ``ok``: ``yes`` when the row meets the issue's targets (coverage 95 ± 3 %, max |z̄| <
  0.3, SE/SD in [0.9, 1.15]), ``≈`` when it misses them by less than its own Monte-Carlo
  error, ``flagged`` when every answer said unreliable, else ``NO`` (:func:`verdict`).

Count kinds give one row per case (their candidates pooled); a kind that discovers also
gives one row of its top strings found without a list (truth: each string's own count);
numeric gives one row per statistic (mean, percentiles, end buckets' shares); a numeric
population is a distribution, its devices drawn afresh in every run, and the truth is the
distribution's own statistic of its values clipped into [lo, hi] (what numeric standard
errors describe).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ldp_telemetry.shared.hashing import MAX_SEED
from simulations.common.settings import RunSettings, progress
from simulations.common.tables import Column, Table
from simulations.coverage.cases import Case, cases

NAME = "coverage"
SUMMARY = (
    "every kind x settings x populations: mean z, SE / empirical SD and 95% interval "
    "coverage of each answer, from the real privatize, sums and estimate code"
)
TARGET_COVERAGE, COVERAGE_SLACK = 0.95, 0.03
MAX_BIAS, SE_RATIO = 0.3, (0.9, 1.15)


@dataclass(frozen=True)
class Sizes:
    """Devices per population and repetitions per case (costly ones: a log-spline fit each)."""

    devices: int
    reps: int
    costly_reps: int


QUICK, FULL = Sizes(devices=4_000, reps=40, costly_reps=12), Sizes(10_000, 150, 40)


@dataclass
class Runs:
    """What the repetitions of one case answered: (repetitions, answers) arrays."""

    names: list[Any]
    estimate: np.ndarray
    std_error: np.ndarray
    low: np.ndarray
    high: np.ndarray
    unreliable: np.ndarray
    truth: np.ndarray  # (repetitions, answers): a discovery's answers differ per run
    selected: bool = False  # answers chosen by the data (a discovery's top strings)


@dataclass(frozen=True)
class Drawn:
    """One run's reports, before any estimate: the hash seed, its mechanism and its sums."""

    seed: int
    mechanism: Any
    sums: Any


def run_case(case: Case, reps: int, rng: np.random.Generator) -> Runs:
    """Return the answers of ``reps`` independent runs of one case."""
    return answer_runs(case, draw_runs(case, reps, rng))


def draw_runs(case: Case, reps: int, rng: np.random.Generator) -> Iterator[Drawn]:
    """Yield ``reps`` independent runs' sums of one case, drawn when asked for (answering
    draws nothing from ``rng``: drawing every run first gives :func:`run_case`'s answers)."""
    values = case.values
    if isinstance(values, np.ndarray) and values.dtype == object:
        values = list(values)  # strings: the sketches take a sequence of str
    for _ in range(reps):
        seed = int(rng.integers(0, MAX_SEED + 1))
        mechanism: Any = case.build(seed)
        sums = mechanism.new_sums()
        if case.draw is not None:  # a numeric population: new devices from its distribution
            values = case.draw(rng)
        if case.repeats == 1:
            sums.add_many(mechanism.privatize_many(values, rng))
        else:  # one permanent response per device, re-randomized in every bucket
            prr = mechanism.permanent.privatize_many(values, rng)
            for _ in range(case.repeats):
                sums.add_many(mechanism.permanent.reflip_many(prr, mechanism.threshold, rng))
        yield Drawn(seed, mechanism, sums)


def answer_runs(case: Case, drawn: Iterable[Drawn]) -> Runs:
    """Return what the case's query answers of each run's sums (:func:`draw_runs`)."""
    found: dict[str, list[np.ndarray]] = {k: [] for k in ("e", "s", "lo", "hi", "u", "t")}
    names: list[Any] = []
    for run in drawn:
        mechanism, sums = run.mechanism, run.sums
        if case.discover:
            discovery = mechanism.discover(sums, top=case.discover)
            answer, flags = discovery.estimates, discovery.reliable
        else:
            answer = mechanism.estimate(sums, case.candidates)
            flags = getattr(answer, "reliable", None)
        if case.repeats > 1:
            answer = mechanism.over_buckets(answer, case.repeats)
        names = list(answer.values)
        for key, column in (
            ("e", answer.estimate),
            ("s", answer.std_error),
            ("lo", answer.ci_low),
            ("hi", answer.ci_high),
            ("u", np.zeros(len(names), bool) if flags is None else ~np.asarray(flags, bool)),
            # counts add up over buckets; a numeric statistic (the pooled mean) does not
            ("t", case.truth(names) * (1 if case.numeric else case.repeats)),
        ):
            found[key].append(np.asarray(column))
    a = {key: np.array(rows) for key, rows in found.items()}
    return Runs(names, a["e"], a["s"], a["lo"], a["hi"], a["u"], a["t"], bool(case.discover))


def summarize(runs: Runs, columns: Sequence[int]) -> dict[str, Any]:
    """Return one table row's numbers over the answers ``columns`` of a case's runs."""
    cols = list(columns)
    e, s, truth = runs.estimate[:, cols], runs.std_error[:, cols], runs.truth[:, cols]
    held = (runs.low[:, cols] <= truth) & (truth <= runs.high[:, cols])
    unreliable = runs.unreliable[:, cols]
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(s > 0, (e - truth) / s, np.where(e == truth, 0.0, np.inf * np.sign(e - truth)))
        sd = float(np.sqrt(np.mean(e.var(axis=0, ddof=1))))
        ratio = float(np.sqrt(np.mean(s**2))) / sd if sd > 0 else float("inf")
    mean_z = float(np.mean(z)) if np.all(np.isfinite(z)) else float("nan")
    trusted = held[~unreliable]
    row: dict[str, Any] = {
        "mean_z": mean_z,
        "worst_z": float(np.max(np.abs(np.mean(z, axis=0)))),
        "se_over_sd": ratio,
        "coverage": float(held.mean()),
        "min_coverage": float(held.mean(axis=0).min()),
        "unreliable": float(unreliable.mean()),
        "reliable_coverage": float(trusted.mean()) if trusted.size else float("nan"),
        "reps": len(e),
        "selected": runs.selected,
    }
    if runs.selected:  # different strings per run: no SD to compare, z̄ has a winner's bias
        row["se_over_sd"] = row["worst_z"] = None
    row["ok"] = verdict(row)
    return row


def verdict(row: dict[str, Any]) -> str:
    """Return whether a row meets the targets: yes, ≈ (a miss within its own noise), NO.

    ``flagged``: every answer said unreliable. Otherwise the coverage of the answers not
    flagged must be within 95 ± 3 % and, when none was flagged, max |z̄| below 0.3 and
    SE/SD within [0.9, 1.15] (a discovery's top strings differ per run: coverage only).
    ``≈``: missed, but each miss is within 2 Monte-Carlo standard errors of the row
    (coverage sqrt(0.95·0.05/runs), z̄ 1/sqrt(runs), SD relative 1/sqrt(2(runs − 1));
    pooled answers counted once, as they may be dependent).
    """
    if row["unreliable"] >= 1.0:
        return "flagged"
    if _meets(row, 0.0):
        return "yes"
    return "≈" if _meets(row, 2.0) else "NO"


def _meets(row: dict[str, Any], noise: float) -> bool:
    reps = float(row["reps"])
    slack = noise * np.sqrt(TARGET_COVERAGE * (1 - TARGET_COVERAGE) / reps)
    covered = abs(row["reliable_coverage"] - TARGET_COVERAGE) <= COVERAGE_SLACK + slack
    if row["unreliable"] > 0 or row.get("selected"):
        return bool(covered)
    bias = np.isfinite(row["worst_z"]) and row["worst_z"] - noise / np.sqrt(reps) < MAX_BIAS
    spread = noise / np.sqrt(2 * (reps - 1))
    ratio = row["se_over_sd"]
    honest = ratio * (1 - spread) <= SE_RATIO[1] and ratio * (1 + spread) >= SE_RATIO[0]
    return bool(covered and bias and honest)


def compute(
    sizes: Sizes, rng: np.random.Generator, show: bool, kinds: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """Return one row per count case and per numeric (case, statistic).

    ``kinds``: only the cases of these kinds, named whole (``hh discover``) or by the first
    word (``hh``: hh and hh discover), e.g. to re-measure one kind's rows alone; every case
    is still built from ``rng``.
    """
    rows = []
    chosen = [
        c
        for c in cases(sizes.devices, rng)
        if not kinds or c.kind in kinds or c.kind.split()[0] in kinds
    ]
    for case in progress(chosen, "coverage cases", show):
        reps = sizes.costly_reps if case.costly else sizes.reps
        runs = run_case(case, reps, rng)
        head = {"kind": case.kind, "setting": case.setting, "population": case.population}
        if case.numeric:
            for i, name in enumerate(runs.names):
                rows.append({**head, "statistic": name, **summarize(runs, [i])})
        elif case.discover:
            label = f"top {case.discover}"
            rows.append({**head, "statistic": label, **summarize(runs, range(case.discover))})
        else:
            label = f"{len(runs.names)} counts"
            rows.append({**head, "statistic": label, **summarize(runs, range(len(runs.names)))})
    return rows


def table(rows: list[dict[str, Any]], sizes: Sizes) -> Table:
    """Return the coverage table."""
    return Table(
        "Coverage of the collector's 95% intervals",
        [
            Column("kind", "kind"),
            Column("setting", "setting"),
            Column("population", "population"),
            Column("statistic", "statistic"),
            Column("reps", "runs", "{:d}"),
            Column("mean_z", "mean z", "{:+.2f}"),
            Column("worst_z", "max abs z̄", "{:.2f}"),
            Column("se_over_sd", "SE/SD", "{:.2f}"),
            Column("coverage", "coverage", "{:.1%}"),
            Column("min_coverage", "min", "{:.1%}"),
            Column("unreliable", "unreliable", "{:.0%}"),
            Column("reliable_coverage", "reliable: coverage", "{:.1%}"),
            Column("ok", "ok"),
        ],
        rows,
        notes=(
            f"n = {sizes.devices:,} devices per population; counts pooled over the candidates "
            "asked (min: the worst one's coverage). ok: coverage 95 ± 3 % (of the answers "
            "not flagged unreliable), max |z̄| < 0.3, SE/SD in [0.9, 1.15]; ≈: a miss within "
            "2 Monte-Carlo SEs of the row; flagged: every answer said unreliable."
        ),
    )


def run(settings: RunSettings) -> list[Path]:
    """Compute and tabulate (printed too); return the files written."""
    sizes = QUICK if settings.quick else FULL
    rows = compute(sizes, settings.rng(), settings.show_progress)
    result = table(rows, sizes)
    print(result.markdown())
    return result.write(settings.folder(NAME), NAME)
