"""Run every benchmark, print the markdown table and write it to bench-results/.

    python -m benchmarks            # full sizes (about 15 minutes with the baseline)
    python -m benchmarks --quick    # smaller sizes, same sections
    python -m benchmarks --smoke    # tiny sizes, no baseline: keeps the script working (CI)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import http_ingest, ours, table
from benchmarks.baseline import BaselineUnavailable, baseline_python, run_baseline
from benchmarks.settings import MODES, Sizes


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_const", dest="mode", const="quick")
    mode.add_argument("--smoke", action="store_const", dest="mode", const="smoke")
    parser.add_argument("--no-baseline", action="store_true", help="measure ours only")
    parser.add_argument("--no-http", action="store_true", help="skip HTTP ingest and memory")
    parser.add_argument("--seed", type=int, default=1, help="seed of the workload")
    parser.add_argument("--out", type=Path, default=Path("bench-results"),
                        help="folder for the table, raw JSON and the baseline venv")
    parser.set_defaults(mode="full")
    return parser.parse_args(argv)


def measure_ours(sizes: Sizes, folder: Path, seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run our sections; return results and the baseline spec for the same work."""
    rng = np.random.default_rng(seed)
    results: dict[str, Any] = {}
    spec: dict[str, Any] = {"repeats": sizes.repeats, "workdir": str(folder)}
    for name, section in (("client", lambda: ours.client(sizes, folder, rng)),
                          ("aggregate", lambda: ours.aggregate(sizes, folder, rng)),
                          ("estimate", lambda: ours.estimate(sizes, rng)),
                          ("accuracy", lambda: ours.accuracy(sizes, folder, seed))):
        _log(f"ours: {name}")
        found, spec[name] = section()
        results.update(found)
    return results, spec


def measure_baseline(args: argparse.Namespace, spec: dict[str, Any], folder: Path,
                     notes: list[str]) -> dict[str, Any]:
    """Install and run pure-ldp; on failure say why in the notes and return nothing."""
    if args.mode == "smoke" or args.no_baseline:
        notes.append("baseline: not run (--smoke / --no-baseline)")
        return {}
    try:
        python = baseline_python(args.out / ".baseline-venv")
        _log("baseline: pure-ldp")
        answer = run_baseline(python, spec, folder)
    except BaselineUnavailable as error:
        notes.append(f"baseline: not available - {error}")
        return {}
    notes.append(f"baseline: pure-ldp {answer['version']} in its own venv; CPU time of "
                 "its calls on the same values, reports and parameters")
    for section, problem in answer.get("errors", {}).items():
        notes.append(f"baseline {section}: failed - {problem}")
    return dict(answer["results"])


def measure_http(args: argparse.Namespace, sizes: Sizes, notes: list[str]) -> dict[str, Any]:
    """Measure HTTP ingest and server memory; on failure say "not available" and why."""
    if args.no_http:
        notes.append("HTTP ingest and server memory: not run (--no-http)")
        return {}
    rng = np.random.default_rng(args.seed + 1)
    try:
        _log("ours: HTTP ingest")
        results = http_ingest.ingest_rates(sizes, rng)
        _log("ours: server memory")
        results.update(http_ingest.peak_memory(sizes, rng))
    except (OSError, RuntimeError, ImportError) as error:
        notes.append(f"HTTP ingest and server memory: not available - {error}")
        return {}
    notes.append(f"HTTP: {http_ingest.CLIENT_THREADS} client threads on the same machine, "
                 f"CMS k={http_ingest.TASK_K}, {sizes.http_reports:,} reports per run")
    return results


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = MODES[args.mode]
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="ldp-bench-") as workdir:
        folder = Path(workdir)
        mine, spec = measure_ours(sizes, folder, args.seed)
        baseline = measure_baseline(args, spec, folder, notes)
    http = measure_http(args, sizes, notes)
    rows = (table.timed_rows(mine, baseline) + table.http_rows(http)
            + table.accuracy_rows(mine, baseline))
    report = table.render(rows, notes, args.mode)
    print(report)
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for name in (f"bench-{args.mode}-{stamp}.md", f"latest-{args.mode}.md"):
        (args.out / name).write_text(report, encoding="utf-8")
    raw = {"mode": args.mode, "ours": mine, "baseline": baseline, "http": http}
    (args.out / f"bench-{args.mode}-{stamp}.json").write_text(
        json.dumps(raw, indent=2, default=float), encoding="utf-8")
    _log(f"written to {args.out}/latest-{args.mode}.md")
    return 0


def _log(message: str) -> None:
    print(f"benchmarks: {message}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
