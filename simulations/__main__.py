"""Command line: ``python -m simulations <experiment> [--seed S] [--out DIR] [--quick]``.

Run from the checkout (not installed). ``all`` runs every experiment in turn.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from simulations.common.settings import DEFAULT_OUT, RunSettings
from simulations.coverage import experiment as coverage
from simulations.frequency import (
    choose_mechanism,
    domain_kinds,
    heavy_hitters,
    rr_seed,
    rr_vs_laplace,
    sketch_accuracy,
)
from simulations.numeric import accuracy as numeric
from simulations.numeric import coverage as numeric_coverage
from simulations.poisoning import experiment as poisoning
from simulations.privacy import lifetime, linkage, longitudinal, posterior, republish, shuffle


class Experiment(Protocol):
    """What every experiment module provides."""

    NAME: str
    SUMMARY: str

    def run(self, settings: RunSettings) -> list[Path]:
        """Compute, plot and tabulate; return the files written."""
        ...


EXPERIMENTS: dict[str, Experiment] = {
    module.NAME: module
    for module in (
        rr_vs_laplace,
        posterior,
        rr_seed,
        sketch_accuracy,
        choose_mechanism,
        heavy_hitters,
        numeric,
        numeric_coverage,
        longitudinal,
        lifetime,
        linkage,
        republish,
        coverage,
        domain_kinds,
        poisoning,
        shuffle,
    )
}


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser; its --help lists every experiment."""
    listing = "\n".join(
        textwrap.fill(
            f"{name:<18} {module.SUMMARY}",
            width=88,
            initial_indent="  ",
            subsequent_indent=" " * 21,
        )
        for name, module in EXPERIMENTS.items()
    )
    parser = argparse.ArgumentParser(
        prog="python -m simulations",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Simulations that reproduce the theory of the local-DP mechanisms: each "
        "writes a PNG (simulation beside theory), a CSV and a markdown table.",
        epilog=f"experiments:\n{listing}\n  {'all':<18} every experiment above, in turn",
    )
    parser.add_argument(
        "experiment",
        choices=[*EXPERIMENTS, "all"],
        metavar="experiment",
        help="which experiment to run (see below)",
    )
    parser.add_argument(
        "--seed",
        type=_seed,
        default=2026,
        help="random seed: the same seed gives the same numbers (default 2026)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help=f"output folder, one sub-folder per experiment (default {DEFAULT_OUT})",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small sizes (seconds, as in the tests) instead of the full runs",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    return parser


def _seed(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("the seed must be a non-negative integer")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Run the chosen experiment(s); print the files written; return the exit status."""
    args = build_parser().parse_args(argv)
    settings = RunSettings(
        seed=args.seed, out_dir=args.out, quick=args.quick, show_progress=not args.no_progress
    )
    names = list(EXPERIMENTS) if args.experiment == "all" else [args.experiment]
    for name in names:
        started = time.perf_counter()
        try:
            paths = EXPERIMENTS[name].run(settings)
        except OSError as error:
            print(
                f"python -m simulations: cannot write the results of {name}: {error}",
                file=sys.stderr,
            )
            return 1
        print(f"{name} ({time.perf_counter() - started:.1f} s):")
        for path in paths:
            print(f"  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
