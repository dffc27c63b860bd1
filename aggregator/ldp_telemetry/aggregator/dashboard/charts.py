"""The dashboard's charts: each is one SVG drawing and the table of exactly what it shows.

The table is shown under the chart (its accessible alternative) and downloaded as CSV with
full precision; the drawing is shown inline and downloaded as SVG. Both come from the same
rows, so a download is what the page showed.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ldp_telemetry.aggregator.dashboard import svg
from ldp_telemetry.aggregator.dashboard.figures import OverTime, top_estimates, when
from ldp_telemetry.shared import TaskConfig

ESTIMATE_COLUMNS = ("estimate", "std_error", "ci_low", "ci_high")
MAX_X_LABELS = 6


@dataclass(frozen=True)
class Column:
    """A table column: its CSV name, its heading and how a cell is shown."""

    name: str
    heading: str
    kind: str = "number"  # "text", "count" (integer), "number" (estimate), "fraction", "time"


@dataclass(frozen=True)
class Chart:
    """A chart: its URL name, title, drawing, and the rows it draws."""

    name: str
    title: str
    drawing: str
    columns: Sequence[Column]
    rows: Sequence[Sequence[Any]]

    def csv(self) -> str:
        """Return the rows as CSV (floats in full: they round-trip to the API's numbers)."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow([column.name for column in self.columns])
        writer.writerows(["" if cell is None else cell for cell in row] for row in self.rows)
        return out.getvalue()


# The first two columns of every per-bucket table.
BUCKET_COLUMNS = (
    Column("bucket", "Bucket (UTC)", "text"),
    Column("bucket_start_unix", "Start (Unix s)", "count"),
)


def reports_chart(config: TaskConfig, series: OverTime) -> Chart:
    """Return the reports in each bucket, against the task's min_batch_size."""
    minimum = config.min_batch_size
    rows = [
        [when(b.start, config.time_precision), b.start, b.n, "yes" if b.n < minimum else "no"]
        for b in series.buckets
    ]
    bars = [svg.Bar(str(row[0]), float(row[2])) for row in rows]
    drawing = svg.bar_chart(
        "chart-reports",
        f"Reports per bucket, {config.task_id}",
        bars,
        "reports",
        reference=(float(minimum), f"min_batch_size {minimum:,}"),
        format_value=lambda value: f"{value:,.0f}",
    )
    columns = [
        *BUCKET_COLUMNS,
        Column("reports", "Reports", "count"),
        Column("below_min_batch_size", "Below min_batch_size", "text"),
    ]
    return Chart("reports", "Reports per bucket", drawing, columns, rows)


def over_time_chart(config: TaskConfig, series: OverTime) -> Chart:
    """Return each value's estimate bucket by bucket, with its confidence band."""
    bodies = [b.body for b in series.buckets if b.body is not None]
    values = [row["value"] for row in bodies[0]["estimates"]] if bodies else []
    rows: list[list[Any]] = []
    lines = []
    for value in values:
        points: list[svg.Point | None] = []
        for bucket in series.buckets:
            row = _row_of(bucket.body, value)
            label = when(bucket.start, config.time_precision)
            if row is None:
                points.append(None)
                rows.append([label, bucket.start, str(value), bucket.n, None, None, None, None])
                continue
            points.append(svg.Point(bucket.start, row["estimate"], row["ci_low"], row["ci_high"]))
            rows.append([label, bucket.start, str(value), bucket.n, *_numbers(row)])
        lines.append(svg.Series(str(value), points))
    drawing = svg.line_chart(
        "chart-over-time",
        f"Estimates over time, {config.task_id}",
        lines,
        _x_ticks(config, series),
        "estimated count",
    )
    columns = [
        *BUCKET_COLUMNS,
        Column("value", "Value", "text"),
        Column("n", "Reports", "count"),
        *_estimate_columns(),
    ]
    return Chart("over-time", "Estimates over time", drawing, columns, rows)


def top_chart(config: TaskConfig, body: Mapping[str, Any]) -> Chart:
    """Return the largest estimates over the range with their confidence intervals."""
    top = top_estimates(body)
    rows = [[str(row["value"]), *_numbers(row)] for row in top]
    bars = [
        svg.Bar(str(row["value"]), row["estimate"], row["ci_low"], row["ci_high"]) for row in top
    ]
    level = f"{body['level']:.0%}"
    drawing = svg.bar_chart(
        "chart-top",
        f"Top estimates, {config.task_id} (n = {body['n']:,}, {level} intervals)",
        bars,
        "estimated count",
    )
    columns = [Column("value", "Value", "text"), *_estimate_columns()]
    return Chart("top", "Top estimates over the range", drawing, columns, rows)


def heavy_hitters_chart(config: TaskConfig, body: Mapping[str, Any]) -> Chart:
    """Return the strings the task's sketches found without a candidate list."""
    found = body["heavy_hitters"]
    rows = [
        [str(row["value"]), *_numbers(row), "yes" if row["reliable"] else "no"] for row in found
    ]
    bars = [
        svg.Bar(str(row["value"]), row["estimate"], row["ci_low"], row["ci_high"]) for row in found
    ]
    drawing = svg.bar_chart(
        "chart-heavy-hitters",
        f"Discovered strings, {config.task_id} (n = {body['n']:,})",
        bars,
        "estimated count",
    )
    columns = [
        Column("value", "String", "text"),
        *_estimate_columns(),
        Column("reliable", "Reliable", "text"),
    ]
    return Chart("heavy-hitters", "Discovered strings (heavy hitters)", drawing, columns, rows)


def _row_of(body: Mapping[str, Any] | None, value: Any) -> Mapping[str, Any] | None:
    if body is None:
        return None
    return next((row for row in body["estimates"] if row["value"] == value), None)


def _numbers(row: Mapping[str, Any]) -> list[float]:
    return [row[name] for name in ESTIMATE_COLUMNS]


def _estimate_columns() -> list[Column]:
    return [
        Column("estimate", "Estimate"),
        Column("std_error", "Std. error"),
        Column("ci_low", "CI low"),
        Column("ci_high", "CI high"),
    ]


def _x_ticks(config: TaskConfig, series: OverTime) -> list[tuple[float, str]]:
    starts = [b.start for b in series.buckets]
    step = max(1, -(-len(starts) // MAX_X_LABELS))
    return [(float(s), when(s, config.time_precision, short=True)) for s in starts[::step]]


def slice_name(block: Mapping[str, Any]) -> str:
    """Return a breakdown row's name: its values, and how many thin groups it holds."""
    name = ", ".join(f"{k}={v}" for k, v in block["dimensions"].items()) or "rest"
    return name + (f" (+{len(block['rolled_up'])} rolled up)" if block["rolled_up"] else "")


def breakdown_chart(config: TaskConfig, body: Mapping[str, Any]) -> Chart:
    """Return the largest values' estimates per breakdown row: grouped bars, each a row's
    share of its own reports (counts) or its statistic (numeric), with its interval."""
    shares = config.mechanism_object.reach() is not None  # counts: rows differ in n
    values = [row["value"] for row in top_estimates(body)]
    blocks = body.get("slices", [])
    groups, rows = [], []
    for value in values:
        bars = []
        for block in blocks:
            row = _row_of(block, value)
            if row is None:
                continue
            scale = 1.0 / block["n"] if shares else 1.0
            bars.append(
                svg.Bar(
                    slice_name(block),
                    row["estimate"] * scale,
                    row["ci_low"] * scale,
                    row["ci_high"] * scale,
                )
            )
            rows.append([slice_name(block), str(value), block["n"], *_numbers(row)])
        groups.append((str(value), bars))
    drawing = svg.grouped_bar_chart(
        "chart-breakdown",
        f"By {', '.join(body['breakdown']['group_by'])}, {config.task_id}",
        groups,
        [slice_name(block) for block in blocks],
        "share of the row's reports" if shares else "estimate",
    )
    columns = [
        Column("slice", "Row", "text"),
        Column("value", "Value", "text"),
        Column("n", "Reports", "count"),
        *_estimate_columns(),
    ]
    return Chart("breakdown", "Estimates by slice", drawing, columns, rows)


def changes_chart(config: TaskConfig, body: Mapping[str, Any]) -> Chart:
    """Return each value's change from the previous bucket to the latest, with its interval,
    and whether it is significant after Holm's correction."""
    found = body["differences"]
    bars = [svg.Bar(str(d["value"]), d["difference"], d["ci_low"], d["ci_high"]) for d in found]
    drawing = svg.bar_chart(
        "chart-changes",
        f"Latest bucket minus the one before, {config.task_id}",
        bars,
        "difference of shares" if body["quantity"] == "share" else "difference",
    )
    rows = [
        [str(d["value"]), d["a"], d["b"], d["difference"], d["std_error"], d["ci_low"],
         d["ci_high"], d["adjusted_p"], "yes" if d["significant"] else "no"]
        for d in found
    ]  # fmt: skip
    kind = "fraction" if body["quantity"] == "share" else "number"
    columns = [
        Column("value", "Value", "text"),
        Column("latest", "Latest", kind),
        Column("before", "Before", kind),
        Column("difference", "Difference", kind),
        Column("std_error", "Std. error", kind),
        Column("ci_low", "CI low", kind),
        Column("ci_high", "CI high", kind),
        Column("adjusted_p", "Holm p", "fraction"),
        Column("significant", "Significant", "text"),
    ]
    return Chart("changes", "What changed", drawing, columns, rows)
