"""Charts drawn on the server as SVG: lines with confidence bands, bars with error bars.

The markup holds no script and no ``style`` attribute (the dashboard's Content-Security-
Policy allows neither inline): colours are presentation attributes, the size follows the
``viewBox``, and each chart names itself with ``<title>`` and ``<desc>`` for screen readers
(the page gives the same numbers as a table too). The same string is served inline and as
the SVG download, so both show one drawing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from markupsafe import escape

# Okabe & Ito's colour-blind-safe palette (black last: it is also the axes' colour).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#999933")
FONT = 'font-family="system-ui, sans-serif" font-size="12"'
WIDTH = 760


@dataclass(frozen=True)
class Point:
    """One estimate at ``x``: the value and its confidence interval."""

    x: float
    y: float
    low: float
    high: float


@dataclass(frozen=True)
class Series:
    """A line: its label and points (None: no estimate there, drawn as a gap)."""

    label: str
    points: Sequence[Point | None]


@dataclass(frozen=True)
class Bar:
    """One bar: a label, a value and, optionally, an interval drawn as an error bar."""

    label: str
    value: float
    low: float | None = None
    high: float | None = None


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Return round tick values (steps of 1, 2 or 5 times a power of ten) covering [low, high]."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return [0.0]
    if high <= low:
        low, high = low - 1.0, high + 1.0
    raw = (high - low) / max(1, count)
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.floor(low / step) * step
    return [first + i * step for i in range(math.ceil((high - first) / step - 1e-9) + 1)]


def number(value: float) -> str:
    """Return a tick label: thousands separated, no needless decimals."""
    if value == 0 or abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:,.4g}"


class _Scale:
    def __init__(self, low: float, high: float, start: float, stop: float) -> None:
        self.low, self.span = low, (high - low) or 1.0
        self.start, self.stop = start, stop

    def __call__(self, value: float) -> float:
        return self.start + (value - self.low) / self.span * (self.stop - self.start)


def _open(chart_id: str, title: str, desc: str, height: int) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="{escape(chart_id)}" '
        f'viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" '
        f'aria-labelledby="{escape(chart_id)}-title {escape(chart_id)}-desc" {FONT}>',
        f'<title id="{escape(chart_id)}-title">{escape(title)}</title>',
        f'<desc id="{escape(chart_id)}-desc">{escape(desc)}</desc>',
        f'<rect width="{WIDTH}" height="{height}" fill="#ffffff"/>',
    ]


def line_chart(
    chart_id: str,
    title: str,
    series: Sequence[Series],
    x_ticks: Sequence[tuple[float, str]],
    y_label: str,
) -> str:
    """Return a line chart: one line per series, its confidence interval as a shaded band."""
    known = [p for s in series for p in s.points if p is not None]
    rows = math.ceil(len(series) / 3)
    height = 300 + 20 * rows
    left, right, top, bottom = 80, WIDTH - 40, 20, 250
    xs = [p.x for p in known] + [x for x, _ in x_ticks]
    x = _Scale(min(xs, default=0), max(xs, default=1), left + 10, right - 10)
    ticks = nice_ticks(
        min((p.low for p in known), default=0.0), max((p.high for p in known), default=1.0)
    )
    y = _Scale(ticks[0], ticks[-1], bottom, top)
    desc = f"{len(series)} series over {len(x_ticks)} time buckets; shaded: confidence interval"
    out = _open(chart_id, title, desc, height)
    out += _y_axis(ticks, y, left, right, y_label, (top + bottom) / 2)
    for at, text in x_ticks:
        out.append(
            f'<text x="{x(at):.1f}" y="{bottom + 16}" text-anchor="middle">{escape(text)}</text>'
        )
    for i, line in enumerate(series):
        out += _line(line, PALETTE[i % len(PALETTE)], x, y)
    out += _legend([s.label for s in series], left, 285)
    out.append("</svg>")
    return "\n".join(out)


def _y_axis(
    ticks: Sequence[float], y: _Scale, left: int, right: int, label: str, middle: float
) -> list[str]:
    out = []
    for tick in ticks:
        at = y(tick)
        colour = "#444444" if tick == 0 else "#dddddd"
        out.append(
            f'<line x1="{left}" x2="{right}" y1="{at:.1f}" y2="{at:.1f}" stroke="{colour}"/>'
        )
        out.append(
            f'<text x="{left - 6}" y="{at + 4:.1f}" text-anchor="end">{escape(number(tick))}</text>'
        )
    out.append(
        f'<text transform="translate(16 {middle:.0f}) rotate(-90)" text-anchor="middle">'
        f"{escape(label)}</text>"
    )
    return out


def _runs(points: Sequence[Point | None]) -> list[list[Point]]:
    """Split a series at its gaps."""
    runs: list[list[Point]] = [[]]
    for point in points:
        if point is None:
            runs.append([])
        else:
            runs[-1].append(point)
    return [run for run in runs if run]


def _line(line: Series, colour: str, x: _Scale, y: _Scale) -> list[str]:
    out = []
    for run in _runs(line.points):
        if len(run) > 1:
            band = [f"{x(p.x):.1f},{y(p.high):.1f}" for p in run]
            band += [f"{x(p.x):.1f},{y(p.low):.1f}" for p in reversed(run)]
            out.append(f'<polygon points="{" ".join(band)}" fill="{colour}" fill-opacity="0.18"/>')
            path = " ".join(f"{x(p.x):.1f},{y(p.y):.1f}" for p in run)
            out.append(
                f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>'
            )
        for p in run:
            out.append(
                f'<line x1="{x(p.x):.1f}" x2="{x(p.x):.1f}" y1="{y(p.low):.1f}" '
                f'y2="{y(p.high):.1f}" stroke="{colour}" stroke-opacity="0.5"/>'
            )
            out.append(
                f'<circle cx="{x(p.x):.1f}" cy="{y(p.y):.1f}" r="3" fill="{colour}">'
                f"<title>{escape(line.label)}: {escape(number(p.y))} "
                f"[{escape(number(p.low))}, {escape(number(p.high))}]</title></circle>"
            )
    return out


def _legend(labels: Sequence[str], left: int, top: int) -> list[str]:
    out = []
    for i, label in enumerate(labels):
        col, row = i % 3, i // 3
        lx, ly = left + col * 220, top + row * 20
        out.append(
            f'<rect x="{lx}" y="{ly - 9}" width="14" height="10" '
            f'fill="{PALETTE[i % len(PALETTE)]}"/>'
        )
        out.append(f'<text x="{lx + 20}" y="{ly}">{escape(_short(label, 28))}</text>')
    return out


def bar_chart(
    chart_id: str,
    title: str,
    bars: Sequence[Bar],
    x_label: str,
    reference: tuple[float, str] | None = None,
    format_value: Callable[[float], str] = number,
) -> str:
    """Return horizontal bars with their error bars, and an optional labelled reference line."""
    left, right, top = 190, WIDTH - 80, 30
    height = top + 24 * max(1, len(bars)) + 50
    bottom = height - 40
    values = [v for b in bars for v in (b.value, b.low, b.high) if v is not None]
    values += [0.0] + ([reference[0]] if reference else [])
    ticks = nice_ticks(min(values), max(values))
    x = _Scale(ticks[0], ticks[-1], left, right)
    desc = f"{len(bars)} bars" + ("; lines: confidence intervals" if _has_errors(bars) else "")
    out = _open(chart_id, title, desc, height)
    for tick in ticks:
        colour = "#444444" if tick == 0 else "#dddddd"
        out.append(
            f'<line x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="{top - 6}" y2="{bottom}" '
            f'stroke="{colour}"/>'
        )
        out.append(
            f'<text x="{x(tick):.1f}" y="{bottom + 16}" text-anchor="middle">'
            f"{escape(number(tick))}</text>"
        )
    out.append(f'<text x="{(left + right) / 2:.0f}" y="{height - 6}" text-anchor="middle">')
    out.append(f"{escape(x_label)}</text>")
    for i, bar in enumerate(bars):
        out += _bar(bar, x, top + 24 * i, format_value)
    if reference is not None:
        at = x(reference[0])
        out.append(
            f'<line x1="{at:.1f}" x2="{at:.1f}" y1="{top - 10}" y2="{bottom}" stroke="#D55E00" '
            f'stroke-width="2" stroke-dasharray="6 3"/>'
        )
        out.append(
            f'<text x="{at:.1f}" y="{top - 14}" text-anchor="middle" fill="#A33F00">'
            f"{escape(reference[1])}</text>"
        )
    out.append("</svg>")
    return "\n".join(out)


def _has_errors(bars: Sequence[Bar]) -> bool:
    return any(b.low is not None for b in bars)


def _bar(bar: Bar, x: _Scale, top: int, format_value: Callable[[float], str]) -> list[str]:
    start, end = sorted((x(0.0), x(bar.value)))
    middle = top + 9
    out = [
        f'<text x="184" y="{middle + 4}" text-anchor="end">{escape(_short(bar.label, 26))}'
        f"<title>{escape(bar.label)}</title></text>",
        f'<rect x="{start:.1f}" y="{top}" width="{max(end - start, 1):.1f}" height="18" '
        f'fill="{PALETTE[0]}"/>',
    ]
    if bar.low is not None and bar.high is not None:
        low, high = x(bar.low), x(bar.high)
        out.append(
            f'<path d="M{low:.1f} {middle}H{high:.1f}M{low:.1f} {middle - 5}v10'
            f'M{high:.1f} {middle - 5}v10" stroke="#000000" stroke-width="1.5" fill="none"/>'
        )
    edge = max(x(bar.value), x(bar.high) if bar.high is not None else 0.0)
    out.append(
        f'<text x="{edge + 6:.1f}" y="{middle + 4}">{escape(format_value(bar.value))}</text>'
    )
    return out


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def grouped_bar_chart(
    chart_id: str,
    title: str,
    groups: Sequence[tuple[str, Sequence[Bar]]],
    series: Sequence[str],
    x_label: str,
) -> str:
    """Return horizontal bars in groups (one group per value, one bar per series, each in its
    series' colour) with their error bars, and a legend of the series."""
    left, right, top, bar = 190, WIDTH - 80, 30, 14
    block = bar * len(series) + 10
    legend_rows = math.ceil(len(series) / 3)
    height = top + block * max(1, len(groups)) + 50 + 20 * legend_rows
    bottom = top + block * max(1, len(groups))
    values = [v for _, bars in groups for b in bars for v in (b.value, b.low, b.high)]
    ticks = nice_ticks(
        min([0.0, *(v for v in values if v is not None)]),
        max([0.0, *(v for v in values if v is not None)]),
    )
    x = _Scale(ticks[0], ticks[-1], left, right)
    desc = f"{len(groups)} groups of {len(series)} bars; lines: confidence intervals"
    out = _open(chart_id, title, desc, height)
    for tick in ticks:
        colour = "#444444" if tick == 0 else "#dddddd"
        out.append(
            f'<line x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="{top - 6}" y2="{bottom}" '
            f'stroke="{colour}"/>'
        )
        out.append(
            f'<text x="{x(tick):.1f}" y="{bottom + 16}" text-anchor="middle">'
            f"{escape(number(tick))}</text>"
        )
    out.append(
        f'<text x="{(left + right) / 2:.0f}" y="{bottom + 34}" text-anchor="middle">'
        f"{escape(x_label)}</text>"
    )
    for g, (label, bars) in enumerate(groups):
        at = top + block * g
        out.append(
            f'<text x="184" y="{at + block / 2:.1f}" text-anchor="end">{escape(_short(label, 26))}'
            f"<title>{escape(label)}</title></text>"
        )
        for i, one in enumerate(bars):
            out += _grouped_bar(one, x, at + bar * i, bar - 2, PALETTE[i % len(PALETTE)])
    out += _legend(series, left, bottom + 56)
    out.append("</svg>")
    return "\n".join(out)


def _grouped_bar(one: Bar, x: _Scale, top: float, size: int, colour: str) -> list[str]:
    start, end = sorted((x(0.0), x(one.value)))
    middle = top + size / 2
    out = [
        f'<rect x="{start:.1f}" y="{top:.1f}" width="{max(end - start, 1):.1f}" '
        f'height="{size}" fill="{colour}"><title>{escape(one.label)}: '
        f"{escape(number(one.value))}</title></rect>"
    ]
    if one.low is not None and one.high is not None:
        low, high = x(one.low), x(one.high)
        out.append(
            f'<path d="M{low:.1f} {middle:.1f}H{high:.1f}M{low:.1f} {middle - 4:.1f}v8'
            f'M{high:.1f} {middle - 4:.1f}v8" stroke="#000000" stroke-width="1.2" fill="none"/>'
        )
    return out
