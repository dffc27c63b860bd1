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
@sums_option
def estimates(
    task_id: str,
    candidates: tuple[str, ...],
    candidates_file: IO[str] | None,
    start: int | None,
    end: int | None,
    level: float,
    fmt: str,
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
        body = _run(
            lambda: answer(
                source.task, parse_candidates(source.task, listed or None, limit), window, source
            )
        )
    else:
        opened = open_collector()
        task = load_task(opened.store, task_id)
        limit = int(opened.config["MAX_CANDIDATES"])
        cells = int(opened.config["MAX_ESTIMATE_CELLS"])
        body = _run(
            lambda: answer(
                task,
                parse_candidates(task, listed or None, limit),
                window,
                opened.store,
                max_cells=cells,
            )
        )
    columns = ["value", "estimate", "std_error", "ci_low", "ci_high"]
    if any("reliable" in row for row in body["estimates"]):  # numeric sw rows say it
        columns.append("reliable")
    _print(body, body["estimates"], columns, fmt)


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
@sums_option
def heavy_hitters(
    task_id: str,
    top: int,
    survivors: int,
    start: int | None,
    end: int | None,
    level: float,
    fmt: str,
    sums: str | None,
) -> None:
    """Print a task's most frequent strings, found without candidates (e.g. an hh task)."""
    from ldp_telemetry.aggregator.core.analysis.heavy_hitters import answer

    window = _window(start, end, level)
    if sums is not None:  # a sums file (ldp_telemetry.aggregator.archive, export): no database
        source = _sums_file(sums, task_id)
        body = _run(lambda: answer(source.task, top, survivors, window, source))
    else:
        store = open_collector().store
        task = load_task(store, task_id)
        body = _run(lambda: answer(task, top, survivors, window, store))
    if fmt == "table":
        click.echo(
            f"n = {body['n']}, candidates examined per level: "
            f"{', '.join(map(str, body['examined']))}"
        )
    _print(
        body,
        body["heavy_hitters"],
        ["value", "estimate", "std_error", "ci_low", "ci_high", "reliable"],
        fmt,
    )


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
    if fmt == "json":
        click.echo(json.dumps(body, indent=2))
    elif fmt == "csv":
        writer = csv.DictWriter(
            sys.stdout, fieldnames=columns, extrasaction="ignore", lineterminator="\n"
        )
        writer.writeheader()
        writer.writerows(rows)
    else:
        click.echo(f"{'value':<24} " + " ".join(f"{c:>12}" for c in columns[1:]))
        for row in rows:
            cells = [_cell(row[c]) for c in columns[1:]]
            click.echo(f"{str(row['value'])[:24]:<24} " + " ".join(f"{c:>12}" for c in cells))


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{value:,.1f}" if isinstance(value, float) else str(value)
