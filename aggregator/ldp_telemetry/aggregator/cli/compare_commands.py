"""``ldp-aggregator compare``: two slices or two time ranges, value by value, as tests.

The same checks and JSON as ``POST /v1/tasks/{id}/compare``, read from the database.
"""

from __future__ import annotations

from typing import Any

import click

from ldp_telemetry.aggregator.cli.analysis_commands import FORMATS, _print, _run, parse_time
from ldp_telemetry.aggregator.cli.context import database_option, load_task, open_collector
from ldp_telemetry.shared.estimates import DEFAULT_LEVEL

COLUMNS = ["value", "a", "b", "difference", "std_error", "ci_low", "ci_high", "p_value"]


def _side_options(side: str) -> list[Any]:
    return [
        click.option(
            f"--{side}-where",
            f"{side}_where",
            multiple=True,
            metavar="NAME=VALUE",
            help=f"Side {side}'s slices (repeatable; none: every slice).",
        ),
        click.option(f"--{side}-from", f"{side}_start", type=parse_time, default=None),
        click.option(f"--{side}-to", f"{side}_end", type=parse_time, default=None),
    ]


def _with_sides(command: Any) -> Any:
    for option in reversed(_side_options("a") + _side_options("b")):
        command = option(command)
    return command


@click.command()
@database_option
@click.argument("task_id")
@click.option("--candidate", "candidates", multiple=True, help="A value (repeatable).")
@_with_sides
@click.option("--from", "start", type=parse_time, default=None, help="Both sides' first bucket.")
@click.option("--to", "end", type=parse_time, default=None, help="Both sides' end.")
@click.option(
    "--level",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=DEFAULT_LEVEL,
    show_default=True,
    help="Intervals' level; Holm's family-wise alpha is 1 - level.",
)
@click.option("--format", "fmt", type=FORMATS, default="table", show_default=True)
def compare(task_id: str, candidates: tuple[str, ...], fmt: str, **options: Any) -> None:
    """Compare two slices (--a-where, --b-where) or two ranges (--a-from ... --b-to)."""
    from ldp_telemetry.aggregator.core.analysis import compare as comparison

    opened = open_collector()
    task = load_task(opened.store, task_id)
    body: dict[str, Any] = {"level": options["level"], "a": {}, "b": {}}
    if candidates:
        body["candidates"] = list(candidates)
    for name in ("start", "end"):
        if options[name] is not None:
            body[name] = options[name]
    for side in ("a", "b"):
        where = [item.partition("=") for item in options[f"{side}_where"]]
        if any(not equals for _, equals, _ in where):
            raise click.BadParameter("NAME=VALUE", param_hint=f"--{side}-where")
        if where:
            body[side]["where"] = {name: value for name, _, value in where}
        for name in ("start", "end"):
            if options[f"{side}_{name}"] is not None:
                body[side][name] = options[f"{side}_{name}"]
    limit, cells = int(opened.config["MAX_CANDIDATES"]), int(opened.config["MAX_ESTIMATE_CELLS"])
    answer = _run(
        lambda: comparison.answer(
            task, comparison.parse_compare(task, body, limit), opened.store, max_cells=cells
        )
    )
    if fmt == "table":
        click.echo(
            f"a: {answer['a']['where'] or 'all'} (n = {answer['a']['n']}), "
            f"b: {answer['b']['where'] or 'all'} (n = {answer['b']['n']}); "
            f"{answer['quantity']}s; significant after Holm at alpha = {answer['alpha']:.3g}"
        )
    _print(answer, answer["differences"], [*COLUMNS, "significant"], fmt)
