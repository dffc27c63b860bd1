"""Turn our and the baseline's raw results into the README's table (targets: docs/design.md).

Ratio is always "how many times better ours is": baseline time / our time, our rate /
baseline rate, baseline SD / our SD.
"""

from __future__ import annotations

import math
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

Results = dict[str, dict[str, Any]]


@dataclass(frozen=True)
class Row:
    """One line of the table."""

    what: str
    ours: str
    baseline: str
    ratio: str
    target: str
    met: str


@dataclass(frozen=True)
class Metric:
    """How to read one measurement: its label, unit, better direction and target."""

    key: str
    what: str
    kind: str  # "call" (µs per call), "rate" (per-report seconds -> reports/s), "seconds"
    target: str = "—"
    check: Callable[[float, float | None], bool] | None = None  # (ours, ratio) -> met


def _at_least_ratio(x: float) -> Callable[[float, float | None], bool]:
    return lambda ours, ratio: ratio is not None and ratio >= x


TIMED = [
    Metric(
        "cms_privatize",
        "CMS privatize, 1 value/call (k=65536, m=1024), µs",
        "call",
        "≥ 2× pure-ldp",
        _at_least_ratio(2.0),
    ),
    Metric("cms_privatize_many", "CMS privatize_many (m=1024), µs/report", "call"),
    Metric("hcms_privatize", "HCMS privatize, 1 value/call (m=1024), µs", "call"),
    Metric("rr_privatize", "RR privatize, 1 value/call (pure-ldp: DE, d=2), µs", "call"),
    Metric(
        "cms_aggregate_k2048",
        "CMS aggregation k=2048, m=1024, reports/s/core",
        "rate",
        "≥ 1,000,000/s",
        lambda ours, ratio: ours >= 1e6,
    ),
    Metric(
        "cms_aggregate_k65536",
        "CMS aggregation k=65536, m=1024, reports/s/core",
        "rate",
        "≥ 1,000,000/s",
        lambda ours, ratio: ours >= 1e6,
    ),
    Metric("oue_privatize", "OUE privatize, 1 value/call (d=256), µs", "call"),
    Metric("ss_privatize", "SS privatize, 1 value/call (d=256; pure-ldp has none), µs", "call"),
    Metric("oue_privatize_many", "OUE privatize_many (d=256), µs/report", "call"),
    Metric("ss_privatize_many", "SS privatize_many (d=256), µs/report", "call"),
    Metric("oue_aggregate", "OUE aggregation d=256, reports/s/core", "rate"),
    Metric("ss_aggregate", "SS aggregation d=256 (pure-ldp has none), reports/s/core", "rate"),
    Metric("hcms_aggregate_k2048", "HCMS aggregation k=2048, m=1024, reports/s/core", "rate"),
    Metric("hcms_aggregate_k65536", "HCMS aggregation k=65536, m=1024, reports/s/core", "rate"),
    Metric(
        "cms_estimate_k2048",
        "CMS estimates, 10,000 candidates, k=2048, m=1024, s",
        "seconds",
        "≤ 1 s",
        lambda ours, ratio: ours <= 1.0,
    ),
    Metric(
        "cms_estimate_k65536", "CMS estimates, 10,000 candidates, k=65536, m=1024, s", "seconds"
    ),
    Metric(
        "hcms_estimate_k2048", "HCMS estimates, 10,000 candidates, k=2048, m=1024, s", "seconds"
    ),
    Metric(
        "hcms_estimate_k65536", "HCMS estimates, 10,000 candidates, k=65536, m=1024, s", "seconds"
    ),
]


def timed_rows(ours: Results, baseline: Results) -> list[Row]:
    """Return the rows of every timed measurement present in ``ours``."""
    rows = []
    for metric in TIMED:
        if metric.key not in ours:
            continue
        mine = _value(metric.kind, ours[metric.key])
        base = _value(metric.kind, baseline[metric.key]) if metric.key in baseline else None
        ratio = None if base is None else (mine / base if metric.kind == "rate" else base / mine)
        what = metric.what
        if metric.kind == "rate":
            what += f" (add_many of {ours[metric.key]['reports']:,})"
        if metric.kind == "seconds" and ours[metric.key].get("candidates") != 10_000:
            what = what.replace("10,000", f"{ours[metric.key]['candidates']:,}")
        note = baseline.get(metric.key, {}).get("note")
        rows.append(
            Row(
                what,
                _show(metric.kind, mine),
                _show(metric.kind, base) + (f" ({note})" if note else ""),
                _ratio(ratio),
                metric.target,
                _met(metric.check(mine, ratio)) if metric.check else "—",
            )
        )
    return rows


def http_rows(http: Results) -> list[Row]:
    """Return the HTTP ingest and memory rows (ours only: pure-ldp has no server)."""
    rows = []
    for key, result in sorted(http.items()):
        if key.startswith("http_ingest_w"):
            workers = int(key.rsplit("w", 1)[1])
            target, met = (
                ("≥ 20,000/s", _met(result["rate"] >= 20_000)) if workers == 2 else ("—", "—")
            )
            rows.append(
                Row(
                    f"HTTP ingest, durable, batches of 500, {workers} worker(s), reports/s",
                    f"{result['rate']:,.0f}",
                    "—",
                    "—",
                    target,
                    met,
                )
            )
            # Issue 38: beside the same task without, both folding every INGEST_STAGED_BYTES.
            dims, plain = (http.get(f"http_ingest_{k}_w{workers}") for k in ("dims", "folding"))
            if dims and plain:
                ratio = dims["rate"] / plain["rate"]
                label = f"HTTP ingest with 2 dimensions (20 slices), folds, {workers} worker(s)"
                ours = f"{dims['rate']:,.0f}/s ({ratio:.2f}× without, same run)"
                rows.append(Row(label, ours, "—", "—", "≥ 0.9× without", _met(ratio >= 0.9)))
    if "server_memory" in http:
        peaks = sorted((int(n), mib) for n, mib in http["server_memory"]["peak_mib"].items())
        shown = ", ".join(f"{mib:,.0f} MiB at {n:,}" for n, mib in peaks)
        # Independent of n: the last doubling of the reports ingested adds < 10% memory.
        flat = len(peaks) < 2 or peaks[-1][1] <= 1.10 * peaks[-2][1]
        rows.append(
            Row(
                "Server peak RSS (master + worker) after n reports",
                shown,
                "—",
                "—",
                "independent of n (last doubling < +10%)",
                _met(flat),
            )
        )
    return rows


def serving_rows(serving: Results) -> list[Row]:
    """Return uploads of 1/10/500 reports beside the no-op ceiling, and slow clients."""
    from ldp_telemetry.aggregator.serving import DEFAULT_SERVER

    servers = [name for name in serving if name != "tool"]
    best_noop = max(
        (
            serving[name]["noop"]["1"]["requests_per_s"]
            for name in servers
            if "1" in serving[name]["noop"]
        ),
        default=0.0,
    )
    rows = []
    for name in servers:
        default = name == DEFAULT_SERVER
        label = f"{name}{' (default)' if default else ''}"
        for batch, ours in serving[name]["collector"].items():
            noop = serving[name]["noop"].get(batch)
            size = int(batch)
            rate = ours["requests_per_s"]
            shown = (
                f"{rate:,.0f} req/s"
                + (f" = {rate * size:,.0f} reports/s" if size > 1 else "")
                + f" (load {ours['loadavg']:.1f})"
            )
            shown += f", p99 {ours['p99_ms']:,.0f} ms; " + (
                # wrk stops with requests in flight: those may be counted, never acked
                f"every ack counted ({ours['expected']:,} acked, {ours['accepted']:,} counted)"
                if ours["accepted"] >= ours["expected"]
                else f"only {ours['accepted']:,} counted of {ours['expected']:,} acked"
            )
            if ours["non_2xx"] or ours["errors"]:
                shown += f"; {ours['non_2xx']} non-2xx, {ours['errors']} errors"
            target, met = "—", "—"
            if default and size == 1:
                target = "≥ 6,000 req/s and ≥ 0.7× best no-op"
                met = _met(rate >= 6000 and rate >= 0.7 * best_noop)
            elif default:
                target, met = "≥ 30,000 reports/s", _met(rate * size >= 30_000)
            rows.append(
                Row(
                    f"Uploads of {size} report(s)/request, {label}, 2 workers, 16 connections",
                    shown,
                    "—" if noop is None else _noop_cell(noop),
                    ("—" if noop is None else f"{rate / noop['requests_per_s']:.2f}× of no-op")
                    + (f", {rate / best_noop:.2f}× of the best" if size == 1 and best_noop else ""),
                    target,
                    met,
                )
            )
        slow = serving[name]["slow"]
        clean = not slow["non_2xx"] and not slow["errors"]
        rows.append(
            Row(
                f"Slow clients, {label}: p99 of 1-report uploads while 200 connections dribble "
                "headers and 200 idle",
                f"{slow['p99_ms']:,.1f} ms (p50 {slow['p50_ms']:,.1f} ms, "
                f"{slow['requests']:,} uploads, {slow['non_2xx']} non-2xx, {slow['errors']} "
                f"errors; load {slow['loadavg']:.1f})",
                "—",
                "—",
                "p99 < 1 s, no 5xx" if default else "—",
                _met(slow["p99_ms"] < 1000 and clean) if default else "—",
            )
        )
        if "analyst" in serving[name]:
            rows.append(_analyst_row(serving[name]["analyst"], label))
    if best_noop:
        rows.append(
            Row(
                "Best no-op ceiling of this run (1 report/request), the 0.7× target's base",
                f"{best_noop:,.0f} req/s",
                "—",
                "—",
                "—",
                "—",
            )
        )
    return rows


def _analyst_row(found: dict[str, Any], label: str) -> Row:
    """Uploads of paced devices alone and beside an analyst looping large estimates."""
    alone, beside = found["alone"], found["beside"]
    ratio = beside["p99_ms"] / alone["p99_ms"] if alone["p99_ms"] else float("inf")
    estimates = found["estimates_s"]
    return Row(
        f"Uploads beside an analyst, {label}: 4 devices' 1-report uploads while estimates of "
        f"{found['candidates']:,} candidates on a k = 65,536, m = 1,024 task "
        f"({found['reports']:,} reports) loop",
        f"p99 {beside['p99_ms']:,.1f} ms beside vs {alone['p99_ms']:,.1f} ms alone "
        f"(p50 {beside['p50_ms']:,.1f} / {alone['p50_ms']:,.1f}, max {beside['max_ms']:,.0f} ms, "
        f"{beside['failed']} failed; {len(estimates)} estimates, "
        f"{max(estimates, default=float('nan')):,.1f} s the slowest; load {found['loadavg']:.1f})",
        "—",
        f"{ratio:.2f}× of alone",
        "p99 ≤ 2× alone, no upload over 1 s",
        _met(ratio <= 2 and beside["max_ms"] <= 1000 and not beside["failed"]),
    )


def hh_rows(found: dict[str, Any] | None) -> list[Row]:
    """Return heavy-hitter discovery on the dashboard benchmark store's hh task."""
    if not found:
        return []
    first, *again = [float(s) for s in found["seconds"]]
    median = float(statistics.median(again or [first]))
    return [
        Row(
            f"Heavy-hitter discovery (top 20), hh task k = m = 1024 of the "
            f"{found['store_reports']:,}-report store ({found['reports']:,} reports, "
            f"{found['buckets']} buckets)",
            f"first {first:.2f} s, then {median:.2f} s median of {len(again)} "
            f"(load {found['loadavg']:.1f})",
            "—",
            "—",
            "≤ 1 s (first and repeated)",
            _met(max(first, median) <= 1.0),
        )
    ]


def accuracy_rows(ours: Results, baseline: Results) -> list[Row]:
    """Return one row per sketch: SD of a count over trials, ours beside pure-ldp's."""
    rows = []
    for name in ("cms", "hcms"):
        key = f"{name}_accuracy"
        if key not in ours:
            continue
        mine, theory, trials = ours[key]["sd"], ours[key]["theory_sd"], ours[key]["trials"]
        base = baseline.get(key, {}).get("sd")
        low, high = _sd_interval(theory, trials)
        rows.append(
            Row(
                f"{name.upper()} accuracy: SD of one count over {trials} trials "
                "(ε=4, k=1024, m=1024)",
                f"{mine:,.1f}",
                "—" if base is None else f"{base:,.1f}",
                _ratio(None if base is None else base / mine),
                f"theory {theory:,.1f} (95%: {low:,.1f}–{high:,.1f})",
                _met(low <= mine <= high),
            )
        )
    return rows


def render(rows: list[Row], notes: list[str], mode: str) -> str:
    """Return the markdown report: header with date and machine, table, notes."""
    lines = [
        f"# ldp-telemetry benchmarks ({mode})",
        "",
        f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        f"- machine: {machine()}",
        f"- load average (1/5/15 min) at the end: "
        f"{' / '.join(f'{x:.2f}' for x in os.getloadavg())}",
        "- times: median CPU time of one process over "
        "repeated runs (HTTP: wall time); ratio = how many times better ours is",
        "",
        "| what | ours | baseline (pure-ldp) | ratio | target | met? |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r.what} | {r.ours} | {r.baseline} | {r.ratio} | {r.target} | {r.met} |" for r in rows
    ]
    if notes:
        lines += ["", *[f"- {note}" for note in notes]]
    return "\n".join(lines) + "\n"


def machine() -> str:
    """Return CPU model, core count, Python and numpy versions."""
    model = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            model = next(
                (
                    line.split(":", 1)[1].strip()
                    for line in cpuinfo
                    if line.startswith("model name")
                ),
                model,
            )
    except OSError:
        pass
    return (
        f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}, numpy {np.__version__}"
    )


def _sd_interval(sd: float, trials: int) -> tuple[float, float]:
    """Return the central 95% range of a sample SD over ``trials`` draws of SD ``sd``."""
    if trials < 2:
        return 0.0, math.inf
    dof = trials - 1
    return (
        sd * math.sqrt(stats.chi2.ppf(0.025, dof) / dof),
        sd * math.sqrt(stats.chi2.ppf(0.975, dof) / dof),
    )


def _value(kind: str, result: dict[str, Any]) -> float:
    return 1.0 / result["seconds"] if kind == "rate" else float(result["seconds"])


def _show(kind: str, value: float | None) -> str:
    if value is None:
        return "—"
    if kind == "call":
        return f"{value * 1e6:.2f}"
    if kind == "rate":
        return f"{value:,.0f}"
    return f"{value:.3f}"


def _ratio(ratio: float | None) -> str:
    return "—" if ratio is None else f"{ratio:.2f}×"


def _met(ok: bool) -> str:
    return "yes" if ok else "NO"


def _noop_cell(noop: dict[str, Any]) -> str:
    return f"no-op app: {noop['requests_per_s']:,.0f} req/s (load {noop['loadavg']:.1f})"
