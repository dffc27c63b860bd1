"""Run every benchmark, print the markdown table and write it to bench-results/.

python -m benchmarks            # full sizes (about 15 minutes with the baseline)
python -m benchmarks --quick    # smaller sizes, same sections
python -m benchmarks --smoke    # tiny sizes, no baseline: keeps the script working (CI)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.baselines import domain_kinds, ours
from benchmarks.baselines.pure_ldp import BaselineSession, BaselineUnavailable, baseline_python
from benchmarks.common import table
from benchmarks.common.settings import MODES, Sizes
from benchmarks.dashboard import render as dashboard_render
from benchmarks.serving import bench as serving_bench
from benchmarks.serving import http_ingest
from benchmarks.store import cluster_ingest


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_const", dest="mode", const="quick")
    mode.add_argument("--smoke", action="store_const", dest="mode", const="smoke")
    parser.add_argument("--no-baseline", action="store_true", help="measure ours only")
    parser.add_argument("--no-http", action="store_true", help="skip HTTP ingest and memory")
    parser.add_argument("--seed", type=int, default=1, help="seed of the workload")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("bench-results"),
        help="folder for the table, raw JSON and the baseline venv",
    )
    parser.set_defaults(mode="full")
    return parser.parse_args(argv)


def open_baseline(
    args: argparse.Namespace, folder: Path, notes: list[str]
) -> BaselineSession | None:
    """Install pure-ldp if needed and start its runner; None (and a note) if it can't."""
    if args.mode == "smoke" or args.no_baseline:
        notes.append("baseline: not run (--smoke / --no-baseline)")
        return None
    try:
        return BaselineSession(baseline_python(args.out / ".baseline-venv"), folder)
    except BaselineUnavailable as error:
        notes.append(f"baseline: not available - {error}")
        return None


def ask_baseline(
    session: BaselineSession | None, spec: dict[str, Any], notes: list[str]
) -> dict[str, Any]:
    """Return the baseline's results for ``spec`` ({} with a note when it fails)."""
    if session is None:
        return {}
    try:
        answer = session.ask(spec)
    except BaselineUnavailable as error:
        notes.append(f"baseline: failed - {error}")
        return {}
    for section, problem in answer.get("errors", {}).items():
        notes.append(f"baseline {section}: failed - {problem}")
    return dict(answer["results"])


def measure_client(
    sizes: Sizes,
    folder: Path,
    rng: np.random.Generator,
    session: BaselineSession | None,
    notes: list[str],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Time privatize, ours and the baseline's alternately on the same values; medians."""
    once = dataclasses.replace(sizes, repeats=1)
    mine: list[dict[str, Any]] = []
    theirs: list[dict[str, Any]] = []
    for _ in range(sizes.repeats):
        found, spec = ours.client(once, folder, rng)
        domain_found, domain_spec = domain_kinds.client(once, folder, rng)
        mine.append({**found, **domain_found})
        ask = {"repeats": 1, "workdir": str(folder), "client": spec, "domain_client": domain_spec}
        theirs.append(ask_baseline(session, ask, notes))
    return _medians(mine), _medians([run for run in theirs if run])


def measure_servers(
    sizes: Sizes,
    folder: Path,
    rng: np.random.Generator,
    seed: int,
    session: BaselineSession | None,
    notes: list[str],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run our aggregation, estimate and accuracy sections, then the baseline's."""
    results: dict[str, Any] = {}
    spec: dict[str, Any] = {"repeats": sizes.repeats, "workdir": str(folder)}
    for name, section in (
        ("aggregate", lambda: ours.aggregate(sizes, folder, rng)),
        ("domain_aggregate", lambda: domain_kinds.aggregate(sizes, folder, rng)),
        ("estimate", lambda: ours.estimate(sizes, rng)),
        ("accuracy", lambda: ours.accuracy(sizes, folder, seed)),
    ):
        _log(f"ours: {name}")
        found, spec[name] = section()
        results.update(found)
    if session is not None:
        _log("baseline: aggregation, estimates, accuracy")
    return results, ask_baseline(session, spec, notes)


def _medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Return per-key results whose "seconds" is the median over runs."""
    if not runs:
        return {}
    merged = {key: dict(value) for key, value in runs[0].items()}
    for key, value in merged.items():
        value["seconds"] = statistics.median(run[key]["seconds"] for run in runs)
    return merged


def measure_http(args: argparse.Namespace, sizes: Sizes, notes: list[str]) -> dict[str, Any]:
    """Measure HTTP ingest, server memory, serving and discovery; on a failure keep what was
    measured and say where it stopped and why."""
    if args.no_http:
        notes.append("HTTP ingest and server memory: not run (--no-http)")
        return {}
    rng = np.random.default_rng(args.seed + 1)
    results: dict[str, Any] = {}
    try:
        _log("ours: HTTP ingest")
        results.update(http_ingest.ingest_rates(sizes, rng))
        _log("ours: server memory")
        results.update(http_ingest.peak_memory(sizes, rng))
        _log(f"ours: serving ({', '.join(sizes.serving_servers)}), slow clients")
        results["serving"] = serving_bench.measure(
            sizes.serving_servers,
            sizes.serving_seconds,
            sizes.slow_seconds,
            rng,
            sizes.serving_pool,
            (sizes.analyst_reports, sizes.analyst_candidates),
        )
        _log("ours: heavy-hitter discovery")
        results["hh_discovery"] = {
            **dashboard_render.hh_discovery(sizes.hh_store_reports, sizes.hh_repeat, rng),
            "store_reports": sizes.hh_store_reports,
            "loadavg": os.getloadavg()[0],
        }
        _log("ours: 2 PostgreSQL nodes vs 1 SQLite node, both flushing every commit")
        results["cluster"] = cluster_ingest.measure(
            list(cluster_ingest.BENCH_BATCHES), sizes.cluster_seconds, sqlite_synchronous="FULL"
        )
    except (OSError, RuntimeError, ImportError, subprocess.SubprocessError) as error:
        # What was measured before the failure is kept (a late section's server that did
        # not start must not drop the others' rows).
        measured = ", ".join(results) or "nothing"
        notes.append(f"HTTP sections: stopped after {measured} - {error}")
    if "serving" in results:
        notes.append(serving_bench.describe(results["serving"], sizes.serving_seconds))
    if results:
        notes.append(
            f"HTTP: {http_ingest.CLIENT_THREADS} client threads on the same machine, "
            f"CMS k={http_ingest.TASK_K}, median of {http_ingest.HTTP_RUNS} runs of "
            f"{sizes.http_reports:,} reports (wall time: sensitive to other load)"
        )
    return results


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = MODES[args.mode]
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="ldp-bench-") as workdir:
        folder = Path(workdir)
        rng = np.random.default_rng(args.seed)
        session = open_baseline(args, folder, notes)
        try:
            _log("ours and baseline: client (alternating)")
            mine, baseline = measure_client(sizes, folder, rng, session, notes)
            found, theirs = measure_servers(sizes, folder, rng, args.seed, session, notes)
        finally:
            if session is not None:
                session.close()
        mine.update(found)
        baseline.update(theirs)
    if baseline and session is not None:
        notes.append(
            f"baseline: pure-ldp {session.version} in its own venv, CPU time of its "
            "calls on the same values, reports and parameters; privatize measured "
            "alternately with ours"
        )
    http = measure_http(args, sizes, notes)
    rows = (
        table.timed_rows(mine, baseline)
        + table.http_rows(http)
        + table.serving_rows(http.get("serving", {}))
        + table.hh_rows(http.get("hh_discovery"))
        + cluster_ingest.table_rows(http.get("cluster"))
        + table.accuracy_rows(mine, baseline)
    )
    report = table.render(rows, notes, args.mode)
    print(report)
    write_outputs(
        args, report, {"mode": args.mode, "ours": mine, "baseline": baseline, "http": http}
    )
    return 0


def write_outputs(args: argparse.Namespace, report: str, raw: dict[str, Any]) -> None:
    """Write the table (timestamped and latest) and the raw JSON to ``args.out``."""
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for name in (f"bench-{args.mode}-{stamp}.md", f"latest-{args.mode}.md"):
        (args.out / name).write_text(report, encoding="utf-8")
    (args.out / f"bench-{args.mode}-{stamp}.json").write_text(
        json.dumps(raw, indent=2, default=float), encoding="utf-8"
    )
    _log(f"written to {args.out}/latest-{args.mode}.md")


def _log(message: str) -> None:
    print(f"benchmarks: {message}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
