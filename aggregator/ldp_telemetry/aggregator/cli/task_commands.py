"""``ldp-aggregator tasks``: create, list and plan tasks."""

from __future__ import annotations

import json
from typing import Any

import click

from ldp_telemetry.aggregator.cli.context import database_option, open_collector
from ldp_telemetry.aggregator.core.analysis.central import planned_lifetime
from ldp_telemetry.shared.mechanisms.auto import AUTO, DEFAULT_MAX_REPORT_BYTES, compare
from ldp_telemetry.shared.mechanisms.lifetime.planning import lifetime_epsilons
from ldp_telemetry.shared.mechanisms.registry import MECHANISMS, all_options, plan
from ldp_telemetry.shared.risk import lift, posterior_bound


class JsonObjectType(click.ParamType):
    """A JSON object given on the command line, e.g. '{"epsilon_inf": 4, "flip": 0.1}'."""

    name = "json"

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        """Return the parsed object, or fail naming the expected form."""
        if isinstance(value, dict):
            return value
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            self.fail(f"expected a JSON object such as '{{\"a\": 1}}', got {value!r}", param, ctx)
        return parsed


JSON = JsonObjectType()


@click.group()
def tasks() -> None:
    """Create, list and plan tasks."""


def mechanism_options(command: Any) -> Any:
    """Add one option per task parameter that any registered mechanism takes."""
    types = {"number": float, "integer": int, "string": str, "strings": str, "object": JSON}
    for option in reversed(list(all_options().values())):
        help_text = option.help + {"strings": " Comma-separated.", "object": " As JSON."}.get(
            option.kind, ""
        )
        command = click.option(
            f"--{option.name.replace('_', '-')}",
            option.name,
            type=types[option.kind],
            help=help_text,
        )(command)
    return command


@tasks.command("create")
@database_option
@click.option("--task-id", required=True)
@click.option("--mechanism", required=True, type=click.Choice((*MECHANISMS, AUTO)))
@mechanism_options
@click.option(
    "--expected-distinct",
    type=click.IntRange(2, None),
    help="auto, for a task without a domain: how many distinct values to expect.",
)
@click.option(
    "--max-report-bytes",
    type=click.IntRange(1, None),
    help=f"auto: the largest report allowed (default {DEFAULT_MAX_REPORT_BYTES}).",
)
@click.option("--time-precision", type=int, help="Bucket width in seconds (default 1 day).")
@click.option("--min-batch-size", type=int)
@click.option("--upload-key-required", is_flag=True, help="Print an upload key once.")
@click.option(
    "--archive",
    is_flag=True,
    help="Also keep the privatized reports accepted (see export --reports).",
)
@click.option(
    "--sealed",
    is_flag=True,
    help="Devices seal each report to the collector's key (first: ldp-aggregator keys new).",
)
@click.option(
    "--dimension",
    "dimensions",
    multiple=True,
    metavar="NAME=V1,V2,...",
    help="A public dimension and its closed list of values (repeatable, at most 3; 'other' "
    "is implied). Sent in the clear: not protected by LDP.",
)
@click.option(
    "--min-slice-size",
    type=int,
    help="With --dimension: fewest reports a slice is answered alone for (default "
    "max(50, min batch size)).",
)
def create_task(**options: Any) -> None:
    """Create a task and print its public configuration as JSON."""
    from ldp_telemetry.aggregator.core.problems import ApiError
    from ldp_telemetry.aggregator.core.sealing_keys import keyring_of
    from ldp_telemetry.aggregator.core.tasks import build_task, created_body
    from ldp_telemetry.aggregator.store import TaskExists

    params = {key: value for key, value in options.items() if value not in (None, False, ())}
    if "dimensions" in params:
        params["dimensions"] = [_dimension(given) for given in params["dimensions"]]
    for name, option in all_options().items():
        if option.kind == "strings" and name in params:
            params[name] = params[name].split(",")
    opened = open_collector()
    try:
        stored, upload_key = build_task(params, opened.config)
        opened.store.create_task(stored)
    except ApiError as error:
        raise click.ClickException(error.detail) from None
    except TaskExists:
        raise click.ClickException(f"task {params['task_id']!r} exists already") from None
    click.echo(json.dumps(created_body(stored, upload_key, keyring_of(opened.config)), indent=2))


def _dimension(given: str) -> dict[str, Any]:
    """Return a --dimension NAME=V1,V2 as the task's ``dimensions`` entry."""
    name, equals, values = given.partition("=")
    if not equals or not values:
        raise click.BadParameter(f"give NAME=V1,V2,..., got {given!r}", param_hint="--dimension")
    return {"name": name, "values": values.split(",")}


@tasks.command("list")
@database_option
def list_tasks() -> None:
    """Print every task's public configuration, one JSON object per line."""
    for stored in open_collector().store.list_tasks():
        click.echo(json.dumps(stored.config.to_dict()))


@tasks.command("plan")
@click.option(
    "--domain-size",
    required=True,
    type=click.IntRange(2, None),
    help="How many distinct values the task may see.",
)
@click.option(
    "--devices",
    required=True,
    type=click.IntRange(1, None),
    help="Reports expected per estimate (devices x reports per period).",
)
@click.option("--epsilon", required=True, type=click.FloatRange(0, 20, min_open=True))
@click.option(
    "--max-report-bytes",
    type=click.IntRange(1, None),
    default=DEFAULT_MAX_REPORT_BYTES,
    show_default=True,
    help="The report-size cap auto applies.",
)
@click.option(
    "--prior",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.01,
    show_default=True,
    help="An adversary's prior belief in one value, for the posterior bound.",
)
@click.option(
    "--changes",
    type=click.IntRange(0, None),
    default=None,
    help="Also show each longitudinal variant's lifetime epsilon for a value that changes this "
    "many times (--epsilon is then one report's, with --epsilon-inf; json: an object).",
)
@click.option(
    "--epsilon-inf",
    type=click.FloatRange(0, 20, min_open=True),
    default=None,
    help="The permanent layer's epsilon for --changes (above --epsilon).",
)
@click.option(
    "--batches",
    type=click.IntRange(1, 100_000),
    default=None,
    help="Also show a device's central epsilon through a shuffler over this many batches "
    "(one a period, e.g. 365 daily), composed (json: central_lifetime).",
)
@click.option(
    "--batch-size",
    type=click.IntRange(1, None),
    default=None,
    help="The reports of one shuffled batch for --batches (default: --devices).",
)
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
def plan_task(
    domain_size: int,
    devices: int,
    epsilon: float,
    max_report_bytes: int,
    prior: float,
    changes: int | None,
    epsilon_inf: float | None,
    batches: int | None,
    batch_size: int | None,
    fmt: str,
) -> None:
    """Print each mechanism's expected standard error and risk for a workload.

    From the closed-form variances, with the devices spread evenly over the domain (hash
    collisions included); the most accurate mechanism comes first. "attack" is the chance
    that an adversary who sees one report, holding all values equally likely beforehand,
    names the device's value; "lift" is that chance over a blind guess's 1/d.
    """
    if (changes is None) != (epsilon_inf is None) or (epsilon_inf or 21) <= epsilon:
        raise click.UsageError("--changes and --epsilon-inf go together, --epsilon-inf > --epsilon")
    lifetime = (
        lifetime_epsilons(epsilon_inf, epsilon, domain_size, changes)
        if epsilon_inf is not None and changes is not None
        else None
    )
    central = (
        None
        if batches is None
        else planned_lifetime(epsilon, batch_size or devices, batches)  # scipy, dp-accounting
    )
    plans = plan(epsilon, domain_size, devices)
    table = compare(epsilon, domain_size, max_report_bytes=max_report_bytes)
    chosen = table[0].mechanism if table and table[0].excluded is None else None
    bound = posterior_bound(prior, epsilon)
    if fmt == "json":
        rows = [
            {
                "mechanism": name,
                "std_error": p.std_error,
                "report_bits": p.report_bits,
                "attack_success": p.attack_success,
                "fake_report_worth": p.fake_report_worth,
                "lift": None if p.attack_success is None else lift(p.attack_success, domain_size),
                "posterior_bound": bound,
                "chosen_by_auto": name == chosen,
                "parameters": p.fields,
            }
            for name, p in plans
        ]
        extra = {"lifetime": lifetime, "central_lifetime": central}
        given = {key: value for key, value in extra.items() if value is not None}
        click.echo(json.dumps({"mechanisms": rows, **given} if given else rows, indent=2))
        return
    click.echo(
        f"{'mechanism':<10} {'std error of a count':>21} {'report bits':>12} "
        f"{'attack':>7} {'lift':>6} {'one fake report':>16}  parameters"
    )
    for name, p in plans:
        fields = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in p.fields.items())
        risk = (
            f"{p.attack_success:>7.3f} {lift(p.attack_success, domain_size):>5.1f}x"
            if p.attack_success is not None
            else f"{'-':>7} {'-':>6}"
        )
        worth = f"{p.fake_report_worth:,.1f}" if p.fake_report_worth is not None else "-"
        click.echo(
            f"{name:<10} {p.std_error:>21,.1f} {p.report_bits:>12,} {risk} {worth:>16}  {fields}"
        )
    best = plans[0][1]
    click.echo(
        f"\nrecommended: {plans[0][0]} (a count's 95% interval is about "
        f"±{1.96 * best.std_error:,.0f} of {devices:,} reports, "
        f"{1.96 * best.std_error / devices:.2%})"
    )
    if chosen is not None:
        click.echo(f"auto (reports up to {max_report_bytes} bytes) chooses: {chosen}")
    click.echo(
        f"attack: the chance that whoever sees one report guesses the value (a blind guess: "
        f"{1 / domain_size:.4f}); whatever the mechanism, an adversary who gave one value "
        f"{prior:.0%} beforehand believes it at most {bound:.3f} after one report."
    )
    click.echo(
        "one fake report: how many honest devices' worth of count one report chosen by an "
        "attacker can add to a value (fake devices gain least where it is small)"
    )
    if lifetime is not None:
        _echo_lifetime(lifetime, changes or 0, epsilon_inf or 0.0)
    if central is not None:
        _echo_central(central, epsilon)


def _echo_central(central: dict[str, Any], epsilon: float) -> None:
    """Print a device's central ε through a shuffler, one batch and composed over many."""
    click.echo(
        f"\ncentral epsilon through a shuffler (any mechanism at epsilon {epsilon:g}; "
        f"batches of {central['batch_size']:,} reports): {central['batch_epsilon']:.4g} per "
        f"batch at delta {central['batch_delta']:g}; a device in {central['batches']} of "
        "them (one a period): "
        f"{central['epsilon']:.4g} composed at delta {central['delta']:.2g} "
        f"(summed: {central['naive_epsilon']:.4g})"
    )


def _echo_lifetime(rows: list[dict[str, Any]], changes: int, epsilon_inf: float) -> None:
    """Print each longitudinal variant's lifetime ε for a value that changes ``changes`` times."""
    click.echo(
        f"\nlifetime epsilon of a device whose value changes {changes} times "
        f"(eps_inf {epsilon_inf:g}):"
    )
    for row in rows:
        if row["lifetime_epsilon"] is None:
            click.echo(f"  {'plain':<8} {row['per_report']:g} per report, no lifetime bound")
            continue
        g = f", g = {row['g']}" if row["g"] is not None else ""
        silenced = (
            f"; silenced by max_epsilon_inf 64 after {row['silenced_after']} values"
            if row["silenced_after"] is not None
            else ""
        )
        click.echo(
            f"  {row['variant']:<8} {row['lifetime_epsilon']:g} "
            f"({row['permanent_responses']} permanent responses{g}){silenced}"
        )
