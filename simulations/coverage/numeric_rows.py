"""The numeric rows of ``python -m simulations coverage`` alone, for iterating on the numeric
estimators.

The same cases, runs and summaries as :mod:`simulations.coverage.experiment` (full sizes), over the
numeric settings chosen by their index in ``SETTINGS["numbers"]`` (and, with ``--populations``,
only those populations' rows: the others are built, not run); the generator starts from
``--seed`` here, so the rows differ from a whole ``python -m simulations coverage`` run by chance
only. Prints the markdown table.

    .venv/bin/python -m simulations.coverage.numeric_rows --seed 2026 --settings 0 2 3
    python -m simulations.coverage.numeric_rows --seed 7 --settings 4 --populations lognormal
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

import numpy as np

from simulations.coverage import experiment as coverage
from simulations.coverage.cases import SETTINGS, numeric_cases


def rows(
    seed: int, settings: list[int], sizes: coverage.Sizes, populations: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """Return one row per (case, statistic) of the chosen numeric settings (and populations)."""
    rng = np.random.default_rng(seed)
    out = []
    for index in settings:
        setting, fields = SETTINGS["numbers"][index]
        for case in numeric_cases(setting, fields, sizes.devices, rng):
            if populations and case.population not in populations:
                continue
            reps = sizes.costly_reps if case.costly else sizes.reps
            runs = coverage.run_case(case, reps, rng)
            head = {"kind": case.kind, "setting": case.setting, "population": case.population}
            for i, name in enumerate(runs.names):
                out.append({**head, "statistic": name, **coverage.summarize(runs, [i])})
    return out


def main() -> None:
    """Parse the seed and settings; print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--settings", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--populations", nargs="+", default=[], help="only these (e.g. lognormal)")
    parser.add_argument("--quick", action="store_true", help="the quick sizes")
    args = parser.parse_args()
    sizes = coverage.QUICK if args.quick else coverage.FULL
    print(coverage.table(rows(args.seed, args.settings, sizes, args.populations), sizes).markdown())


if __name__ == "__main__":
    main()
