"""The numeric rows of ``python -m simulations coverage`` alone, for iterating on the numeric
estimators.

The same cases, runs and summaries as :mod:`simulations.coverage.experiment` (full sizes), over the
numeric settings chosen by their index in ``SETTINGS["numbers"]`` (and, with ``--populations``,
only those populations' rows: the others are built, not run); the generator starts from
``--seed`` here, so the rows differ from a whole ``python -m simulations coverage`` run by chance
only. Prints the markdown table.

    .venv/bin/python -m simulations.coverage.numeric_rows --seed 2026 --settings 0 2 3
    python -m simulations.coverage.numeric_rows --seed 7 --settings 4 --populations lognormal

``--as-row`` answers every Square Wave run as a breakdown's row is answered
(``SquareWave.estimate_rows``: the same refit searches side by side, issue 38);
``--devices`` and ``--runs`` set the devices per population and the runs per Square Wave case.

    python -m simulations.coverage.numeric_rows --as-row --devices 2000 --runs 200 --settings 0 1

``--store-counts DIR`` also writes every run's output counts (:mod:`simulations.coverage.stored`;
``--draw-only``: only that, in seconds); ``--from-counts DIR`` answers the runs stored there for
``--seed`` and ``--settings`` (and ``--populations``) with the code as it is, the same table
without drawing anything: a changed estimator measured on the same draws.

    python -m simulations.coverage.numeric_rows --seed 7 --settings 4 --populations lognormal \
        --store-counts /tmp/counts --draw-only
    python -m simulations.coverage.numeric_rows --seed 7 --settings 4 --from-counts /tmp/counts
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from simulations.coverage import experiment as coverage
from simulations.coverage import stored
from simulations.coverage.cases import SETTINGS, numeric_cases


class AsRow:
    """A Square Wave mechanism whose ``estimate`` is a breakdown row's (``estimate_rows``)."""

    def __init__(self, mechanism: Any) -> None:
        self.mechanism = mechanism

    def __getattr__(self, name: str) -> Any:
        return getattr(self.mechanism, name)

    def estimate(self, sums: Any, candidates: Any = None) -> Any:
        """Return the row's answer of ``sums``, as a breakdown gives it."""
        return self.mechanism.estimate_rows([sums], candidates)[0]


def as_row(case: Any) -> Any:
    """Return ``case`` answered as a breakdown's row (Square Wave cases; others unchanged)."""
    if not case.costly:
        return case
    build = case.build
    return dataclasses.replace(case, build=lambda seed: AsRow(build(seed)))


def rows(
    seed: int,
    settings: list[int],
    sizes: coverage.Sizes,
    populations: Sequence[str] = (),
    row: bool = False,
    store: Path | None = None,
    answer: bool = True,
) -> list[dict[str, Any]]:
    """Return one row per (case, statistic) of the chosen numeric settings (and populations);
    ``row``: Square Wave answered as a breakdown's row; ``store``: each case's runs written
    there too (:func:`stored.store`); ``answer``: False to draw (and store) only."""
    rng = np.random.default_rng(seed)
    out: list[dict[str, Any]] = []
    for index in settings:
        setting, fields = SETTINGS["numbers"][index]
        for position, case in enumerate(numeric_cases(setting, fields, sizes.devices, rng)):
            if populations and case.population not in populations:
                continue
            if row:
                case = as_row(case)
            reps = sizes.costly_reps if case.costly else sizes.reps
            drawn: Iterable[coverage.Drawn] = coverage.draw_runs(case, reps, rng)
            if store is not None:
                drawn = list(drawn)
                stored.store(store, seed, index, position, fields, case, drawn)
            if answer:
                out += summaries(case, coverage.answer_runs(case, drawn))
    return out


def from_counts(
    folder: Path, seed: int, settings: list[int], populations: Sequence[str] = (), row: bool = False
) -> tuple[list[dict[str, Any]], int]:
    """Return :func:`rows` of the runs stored in ``folder`` (``--store-counts``), answered now,
    and the devices per run."""
    out: list[dict[str, Any]] = []
    devices = 0
    files = stored.stored(folder, seed, settings)
    if not files:
        raise SystemExit(f"no stored runs of seed {seed}, settings {settings} in {folder}")
    for file in files:
        case, drawn = stored.load(file)
        if populations and case.population not in populations:
            continue
        if row and case.costly:
            drawn = [dataclasses.replace(run, mechanism=AsRow(run.mechanism)) for run in drawn]
        devices = max([devices, *(run.sums.total for run in drawn)])
        out += summaries(case, coverage.answer_runs(case, drawn))
    return out, devices


def summaries(case: Any, runs: coverage.Runs) -> list[dict[str, Any]]:
    """Return the table's rows of one case's runs: one per statistic."""
    head = {"kind": case.kind, "setting": case.setting, "population": case.population}
    return [
        {**head, "statistic": name, **coverage.summarize(runs, [i])}
        for i, name in enumerate(runs.names)
    ]


def main() -> None:
    """Parse the seed and settings; print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--settings", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--populations", nargs="+", default=[], help="only these (e.g. lognormal)")
    parser.add_argument("--quick", action="store_true", help="the quick sizes")
    parser.add_argument("--as-row", action="store_true", help="answer as a breakdown's row")
    parser.add_argument("--devices", type=int, help="devices per population")
    parser.add_argument("--runs", type=int, help="runs per Square Wave case")
    parser.add_argument("--store-counts", type=Path, help="write every run's counts here")
    parser.add_argument("--draw-only", action="store_true", help="store the counts, answer none")
    parser.add_argument("--from-counts", type=Path, help="answer the runs stored here instead")
    args = parser.parse_args()
    sizes = coverage.QUICK if args.quick else coverage.FULL
    sizes = dataclasses.replace(
        sizes,
        devices=args.devices or sizes.devices,
        costly_reps=args.runs or sizes.costly_reps,
    )
    if args.from_counts is not None:
        found, devices = from_counts(
            args.from_counts, args.seed, args.settings, args.populations, args.as_row
        )
        print(coverage.table(found, dataclasses.replace(sizes, devices=devices)).markdown())
        return
    if args.draw_only and args.store_counts is None:
        parser.error("--draw-only needs --store-counts")
    answer = not args.draw_only
    found = rows(
        args.seed, args.settings, sizes, args.populations, args.as_row, args.store_counts, answer
    )
    if answer:
        print(coverage.table(found, sizes).markdown())


if __name__ == "__main__":
    main()
