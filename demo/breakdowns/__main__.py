"""Breakdowns at scale: ``python -m demo.breakdowns [--devices 20000] [--stores ...] [--sdks ...]``.

For each store (SQLite, PostgreSQL: the tests' throwaway server, tests/support/postgres.py)
and each SDK (Python, TypeScript, Java): start ``ldp-aggregator serve`` on a free loopback port
(stopped by its process id), create the scenario's task (demo/breakdowns/scenario.py: 3
platforms × 4 versions + ``other``, a distribution of values per platform, a 30-device
slice), record every device through its own SDK client over HTTP, run the checks
(demo/breakdowns/checks.py), print one line per row and value (n, truth, estimate, SE, z),
the rolled-up slices and the rejections, and the wall times. Exit 1 if any check failed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from demo.breakdowns import devices as sdks
from demo.breakdowns.checks import Outcome, check
from demo.breakdowns.scenario import TASK, Device, population
from demo.server import running_collector
from ldp_telemetry.shared import TaskConfig

STORES = ("sqlite", "postgresql")


@dataclass(frozen=True)
class Run:
    """One (store, SDK) run: delivery, checks and wall times in seconds."""

    store: str
    sdk: str
    devices: int
    delivery: sdks.Delivery
    outcome: Outcome
    record_seconds: float
    check_seconds: float

    @property
    def failures(self) -> list[str]:
        delivered = self.delivery.sent == self.devices and not (
            self.delivery.dropped or self.delivery.rejected or self.delivery.queued
        )
        lost = [] if delivered else [f"SDKs delivered {self.delivery}"]
        return lost + self.outcome.exact + self.outcome.statistical


@contextmanager
def databases(stores: Sequence[str], folder: Path) -> Iterator[Callable[[str], str | None]]:
    """Yield a function that gives a fresh database per store (None: SQLite in the folder)."""
    with ExitStack() as stack:
        server = None
        if "postgresql" in stores:
            from demo.postgres import PostgresServer

            server = PostgresServer()
            stack.callback(server.stop)
        yield lambda store: server.new_database() if store == "postgresql" and server else None


def run_one(store: str, sdk: str, devices: list[Device], folder: Path, database: str | None) -> Run:
    """Start a collector, create the task, run the devices through ``sdk``, check."""
    with running_collector(folder, database, name=f"{store}-{sdk}") as collector:
        served = collector.post("/v1/tasks", TASK, collector.admin_token)
        served.pop("upload_key", None)
        task = TaskConfig.from_dict(served)
        started = time.monotonic()
        delivery = sdks.run(sdk, collector.url, served, devices, folder)
        recorded = time.monotonic()
        outcome = check(collector, task, devices)
        return Run(
            store, sdk, len(devices), delivery, outcome, recorded - started,
            time.monotonic() - recorded,
        )  # fmt: skip


def print_run(run: Run) -> None:
    """Print one run's rows, rolled-up slices, rejections and times."""
    print(f"\n## {run.store}, {run.sdk} SDK: {run.devices:,} devices")
    print(f"SDKs: {run.delivery}")
    print("\n| by | row | n | value | truth | estimate | SE | z |")
    print("|:--|:--|--:|:--|--:|--:|--:|--:|")
    for row in run.outcome.rows:
        for v in row.values:
            print(
                f"| {row.group_by} | {row.label} | {row.n:,} | {v.value} | {v.truth:,} "
                f"| {v.estimate:,.1f} | {v.std_error:.1f} | {v.z:+.2f} |"
            )
    for row in run.outcome.rows:
        if row.rolled_up:
            merged = ", ".join("/".join(s) for s in row.rolled_up)
            print(f"by {row.group_by}: rolled up into {row.label}: {merged}")
    print(f"raw reports rejected: {run.outcome.rejected}")
    print(
        f"recording {run.record_seconds:.1f} s ({run.devices / run.record_seconds:,.0f} "
        f"devices/s), checks {run.check_seconds:.1f} s; max |z| {run.outcome.max_z:.2f}"
    )
    for failure in run.failures:
        print(f"FAILED: {failure}")


def main(argv: list[str] | None = None) -> int:
    """Run every (store, SDK) and print the tables; 0 if every check passed."""
    args = _parser().parse_args(argv)
    started = time.monotonic()
    devices = population(args.devices, args.seed)
    for sdk in args.sdks:
        sdks.build(sdk)
    runs = []
    with (
        tempfile.TemporaryDirectory(prefix="ldp-breakdowns-") as tmp,
        databases(args.stores, Path(tmp)) as database,
    ):
        for store in args.stores:
            for sdk in args.sdks:
                folder = Path(tmp) / f"{store}-{sdk}"
                folder.mkdir()
                runs.append(run_one(store, sdk, devices, folder, database(store)))
                print_run(runs[-1])
    print("\n| store | SDK | devices | rows | max abs z | recording s | checks s | failures |")
    print("|:--|:--|--:|--:|--:|--:|--:|--:|")
    for run in runs:
        print(
            f"| {run.store} | {run.sdk} | {run.devices:,} | {len(run.outcome.rows)} "
            f"| {run.outcome.max_z:.2f} | {run.record_seconds:.1f} | {run.check_seconds:.1f} "
            f"| {len(run.failures)} |"
        )
    print(f"done in {time.monotonic() - started:.0f} s; every collector was stopped.")
    return 1 if any(run.failures for run in runs) else 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m demo.breakdowns", description=__doc__)
    parser.add_argument("--devices", type=int, default=20_000, help="default: %(default)s")
    parser.add_argument("--stores", nargs="+", choices=STORES, default=list(STORES))
    parser.add_argument("--sdks", nargs="+", choices=sdks.SDKS, default=list(sdks.SDKS))
    parser.add_argument(
        "--seed", type=int, default=38, help="the population's (noise: the SDKs' CSPRNG)"
    )
    return parser


if __name__ == "__main__":
    sys.exit(main())
