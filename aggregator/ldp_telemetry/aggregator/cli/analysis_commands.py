"""``ldp-aggregator estimates`` and ``heavy-hitters``: the analyst's answers, offline.

They read the database directly, with the same checks and the same JSON as the HTTP
endpoints (``POST /v1/tasks/{id}/estimates`` and ``/heavy-hitters``).
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any, TypeVar

import click

from ldp_telemetry.aggregator.cli.context import database_option, load_task, open_collector
from ldp_telemetry.shared.estimates import DEFAULT_LEVEL

FORMATS = click.Choice(["table", "json", "csv"])
Answer = TypeVar("Answer")


def parse_time(text: str) -> int:
    """Return Unix seconds from an integer or an ISO 8601 date/time (UTC unless given)."""
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise click.BadParameter(
            f"{text!r} is neither Unix seconds nor an ISO 8601 date "
            "(e.g. 2026-11-24 or 2026-11-24T12:00:00Z)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return int(moment.timestamp())


def window_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add --from/--to (bucket starts in [from, to)) and --level."""
    for option in reversed(
        [
            click.option(
                "--from",
                "start",
                type=parse_time,
                default=None,
                help="First bucket start (Unix seconds or ISO date, UTC).",
            ),
            click.option(
                "--to",
                "end",
                type=parse_time,
                default=None,
                help="Buckets starting before this (Unix seconds or ISO date, UTC).",
            ),
            click.option(
                "--level",
                type=click.FloatRange(0, 1, min_open=True, max_open=True),
                default=DEFAULT_LEVEL,
                show_default=True,
                help="Confidence level.",
            ),
            click.option("--format", "fmt", type=FORMATS, default="table", show_default=True),
        ]
    ):
        command = option(command)
    return command


def breakdown_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add --group-by NAME and --where NAME=VALUE (both repeatable)."""
    command = click.option(
        "--where",
        "where",
        multiple=True,
        metavar="NAME=VALUE",
        help="Limit the rows to a dimension's value (repeatable; the totals are not limited).",
    )(command)
    return click.option(
        "--group-by",
        "group_by",
        multiple=True,
        metavar="NAME",
        help="Answer one row per value of this dimension too (repeatable, in order; "
        "groups with fewer than the task's min_slice_size reports are rolled up).",
    )(command)


def _breakdown(task: Any, group_by: tuple[str, ...], where: tuple[str, ...]) -> Any:
    """Return the checked breakdown the options ask for (None: neither option given)."""
    from ldp_telemetry.aggregator.core.analysis.query import parse_breakdown

    if not group_by and not where:
        return None
    fixed: dict[str, str] = {}
    for item in where:
        name, equals, value = item.partition("=")
        if not equals:
            raise click.BadParameter(f"{item!r} is not NAME=VALUE", param_hint="--where")
        fixed[name] = value
    return _run(lambda: parse_breakdown(task, {"group_by": list(group_by), "where": fixed}))


def sums_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add --sums FILE: answer from a sums file instead of the database."""
    return click.option(
        "--sums",
        type=click.Path(exists=True, dir_okay=False),
        default=None,
        help="Read the sums from this Parquet file (python -m ldp_telemetry.aggregator.archive, or "
        "export --what sums --format parquet) instead of the database.",
    )(command)


@click.command()
@database_option
@click.argument("task_id")
@click.option(
    "--candidate",
    "candidates",
    multiple=True,
    help="A value to estimate (repeatable). Default: the task's own choice.",
)
@click.option(
    "--candidates-file",
    type=click.File("r"),
    default=None,
    help="A file with one candidate per line ('-' reads standard input).",
)
@window_options
@breakdown_options
@sums_option
def estimates(
    task_id: str,
    candidates: tuple[str, ...],
    candidates_file: IO[str] | None,
    start: int | None,
    end: int | None,
    level: float,
    fmt: str,
    group_by: tuple[str, ...],
    where: tuple[str, ...],
    sums: str | None,
) -> None:
    """Print a task's estimated counts with standard errors and confidence intervals."""
    from ldp_telemetry.aggregator.core.analysis.estimates import answer
    from ldp_telemetry.aggregator.core.analysis.query import parse_candidates
    from ldp_telemetry.aggregator.core.config import DEFAULTS

    listed = list(candidates)
    if candidates_file is not None:
        listed += [line.rstrip("\r\n") for line in candidates_file if line.strip()]
    window = _window(start, end, level)
    if sums is not None:  # a sums file (ldp_telemetry.aggregator.archive, export): no database
        source = _sums_file(sums, task_id)
        limit = int(str(DEFAULTS["MAX_CANDIDATES"]))
        breakdown = _breakdown(source.task, group_by, where)
        body = _run(
            lambda: answer(
                source.task,
                parse_candidates(source.task, listed or None, limit),
                window,
                source,
                breakdown=breakdown,
            )
        )
    else:
        opened = open_collector()
        task = load_task(opened.store, task_id)
        limit = int(opened.config["MAX_CANDIDATES"])
        cells = int(opened.config["MAX_ESTIMATE_CELLS"])
        breakdown = _breakdown(task, group_by, where)
        body = _run(
            lambda: answer(
                task,
                parse_candidates(task, listed or None, limit),
                window,
                opened.store,
                max_cells=cells,
                breakdown=breakdown,
            )
        )
    columns = ["value", "estimate", "std_error", "ci_low", "ci_high"]
    if any("reliable" in row for row in body["estimates"]):  # numeric sw rows say it
        columns.append("reliable")
    _print(body, _with_slices(body, "estimates"), columns, fmt)


@click.command("heavy-hitters")
@database_option
@click.argument("task_id")
@click.option("--top", default=20, show_default=True, type=click.IntRange(1, 1000))
@click.option(
    "--survivors",
    default=64,
    show_default=True,
    type=click.IntRange(1, 4096),
    help="Prefixes kept per level while searching.",
)
@window_options
@breakdown_options
@sums_option
def heavy_hitters(
    task_id: str,
    top: int,
    survivors: int,
    start: int | None,
    end: int | None,
    level: float,
    fmt: str,
    group_by: tuple[str, ...],
    where: tuple[str, ...],
    sums: str | None,
) -> None:
    """Print a task's most frequent strings, found without candidates (e.g. an hh task)."""
    from ldp_telemetry.aggregator.core.analysis.heavy_hitters import answer

    window = _window(start, end, level)
    if sums is not None:  # a sums file (ldp_telemetry.aggregator.archive, export): no database
        source = _sums_file(sums, task_id)
        breakdown = _breakdown(source.task, group_by, where)
        body = _run(lambda: answer(source.task, top, survivors, window, source, breakdown))
    else:
        store = open_collector().store
        task = load_task(store, task_id)
        breakdown = _breakdown(task, group_by, where)
        body = _run(lambda: answer(task, top, survivors, window, store, breakdown))
    if fmt == "table":
        click.echo(
            f"n = {body['n']}, candidates examined per level: "
            f"{', '.join(map(str, body['examined']))}"
        )
    _print(
        body,
        _with_slices(body, "heavy_hitters"),
        ["value", "estimate", "std_error", "ci_low", "ci_high", "reliable"],
        fmt,
    )


def _with_slices(body: Mapping[str, Any], key: str) -> list[dict[str, Any]]:
    """Return the totals' rows, then each breakdown row's, with a ``slice`` column when the
    answer has a breakdown ("all" for the totals, "platform=ios" for a row, "+ n rolled up")."""
    if "breakdown" not in body:
        return list(body[key])
    rows = [{"slice": "all", **row} for row in body[key]]
    for block in body.get("slices", []):
        name = " ".join(f"{k}={v}" for k, v in block["dimensions"].items()) or "(rest)"
        if block["rolled_up"]:
            name += f" +{len(block['rolled_up'])} rolled up"
        rows += [{"slice": name, **row} for row in block[key]]
    return rows


def _sums_file(path: str, task_id: str) -> Any:
    try:
        from ldp_telemetry.aggregator.archive.parquet import SumsFile

        source = SumsFile(path)
    except ImportError:
        raise click.ClickException(
            "--sums needs the [parquet] extra: pip install 'ldp-telemetry-collector[parquet]'"
        ) from None
    except (ValueError, OSError) as error:
        raise click.ClickException(str(error)) from None
    if source.task.task_id != task_id:
        raise click.ClickException(
            f"{path} holds the sums of task {source.task.task_id!r}, not {task_id!r}"
        )
    return source


def _window(start: int | None, end: int | None, level: float) -> Any:
    from ldp_telemetry.aggregator.core.analysis.query import Window

    if start is not None and end is not None and start >= end:
        raise click.BadParameter(f"--from ({start}) must be before --to ({end})")
    return Window(start, end, level)


def _run(work: Callable[[], Answer]) -> Answer:
    """Run a query; a problem the HTTP API would answer becomes the command's error."""
    from ldp_telemetry.aggregator.core.problems import ApiError

    try:
        return work()
    except ApiError as error:
        raise click.ClickException(f"{error.detail} ({error.code})") from None


def _print(
    body: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], columns: list[str], fmt: str
) -> None:
    if rows and "slice" in rows[0]:
        columns = ["slice", *columns]
    if fmt == "json":
        click.echo(json.dumps(body, indent=2))
    elif fmt == "csv":
        writer = csv.DictWriter(
            sys.stdout, fieldnames=columns, extrasaction="ignore", lineterminator="\n"
        )
        writer.writeheader()
        writer.writerows(rows)
    else:
        first = columns.index("value")
        # A value is cut at 24 characters; a slice's name is shown whole (up to 48).
        widths = [
            min(48, max([24] + [len(str(row[c])) for row in rows])) if c == "slice" else 24
            for c in columns[: first + 1]
        ]
        head = [f"{c:<{w}}" for c, w in zip(columns, widths, strict=False)]
        click.echo(" ".join(head) + " " + " ".join(f"{c:>12}" for c in columns[first + 1 :]))
        for row in rows:
            left = [f"{str(row[c])[:w]:<{w}}" for c, w in zip(columns, widths, strict=False)]
            cells = [_cell(row[c]) for c in columns[first + 1 :]]
            click.echo(" ".join(left) + " " + " ".join(f"{c:>12}" for c in cells))


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{value:,.1f}" if isinstance(value, float) else str(value)
