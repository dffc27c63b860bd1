"""``ldp-aggregator export`` and ``backup``: get the collector's data out, safely.

``export`` writes a task's stored sums (exact integers, per time bucket and row) or its
estimates per time bucket, as JSON, CSV or Parquet (the ``[parquet]`` extra). ``backup``
writes a consistent copy of the whole database while the collector keeps serving.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from ldp_telemetry.aggregator.cli.context import (
    Collector,
    database_option,
    load_task,
    open_collector,
)

SUMS_COLUMNS = ["task_id", "bucket", "slice", "row", "n", "counters"]
ESTIMATE_COLUMNS = ["task_id", "bucket", "n", "value", "estimate", "std_error", "ci_low", "ci_high"]


@click.command()
@database_option
@click.argument("task_id")
@click.option(
    "--what",
    type=click.Choice(["sums", "estimates"]),
    default="sums",
    show_default=True,
    help="Stored integer sums, or estimates per time bucket.",
)
@click.option(
    "--candidate",
    "candidates",
    multiple=True,
    help="With --what estimates: a value to estimate (repeatable; default: the task's own choice).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "csv", "parquet"]),
    default="json",
    show_default=True,
)
@click.option(
    "--output",
    "-o",
    type=click.Path(writable=True),
    default=None,
    help="File to write (default: standard output; required for parquet); "
    "with --reports, the archive's folder.",
)
@click.option(
    "--reports",
    is_flag=True,
    help="Write the task's archived privatized reports (tasks created with --archive) "
    "as Parquet into the --output folder, partitioned by task and day.",
)
def export(
    task_id: str,
    what: str,
    candidates: tuple[str, ...],
    fmt: str,
    output: str | None,
    reports: bool,
) -> None:
    """Export a task's sums, per-bucket estimates, or archived reports.

    Sums are one record per (bucket, slice, row): the row's report count ``n`` and its
    integer ``counters`` (in CSV, space-separated); ``slice`` is the slice of the task's
    public dimensions (0 without them). Estimates are one record per (bucket, value);
    buckets with fewer reports than the task's min_batch_size are left out (counted on
    standard error). Reports (--reports) are one Parquet row per privatized report that an
    archiving task accepted, in OUTPUT/task_id=TASK/day=YYYY-MM-DD/part-NNNNN.parquet;
    ``python -m ldp_telemetry.aggregator.archive`` sums them.
    """
    if reports:
        _export_reports(task_id, output)
        return
    if fmt == "parquet" and output is None:
        raise click.UsageError("--format parquet needs --output FILE")
    opened = open_collector()
    task = load_task(opened.store, task_id)
    if what == "sums":
        records, columns = _sum_records(opened, task), SUMS_COLUMNS
    else:
        records = _estimate_records(opened, task, list(candidates) or None)
        columns = ESTIMATE_COLUMNS
    rows = list(records)
    _write(rows, columns, fmt, output, {"task": task.to_dict(), "what": what})


def _export_reports(task_id: str, output: str | None) -> None:
    if output is None:
        raise click.UsageError("--reports needs --output FOLDER")
    try:
        from ldp_telemetry.aggregator.archive.parquet import write_archive
    except ImportError:
        raise click.ClickException(
            "--reports needs the [parquet] extra: pip install 'ldp-telemetry-collector[parquet]'"
        ) from None
    store = open_collector().store
    task = load_task(store, task_id)
    stored = store.get_task(task_id)
    if stored is None or not stored.archive:
        raise click.ClickException(
            f"task {task_id!r} keeps no reports: only tasks created with --archive "
            '(or "archive": true) do'
        )
    total, files = write_archive(task, store.archived(task), Path(output))
    click.echo(f"{total} reports in {len(files)} file(s) under {Path(output).resolve()}")


def _sum_records(opened: Collector, task: Any) -> Iterator[dict[str, Any]]:
    for bucket, slice_index, row, n, counters in opened.store.sum_rows(task):
        yield {
            "task_id": task.task_id,
            "bucket": bucket,
            "slice": slice_index,
            "row": row,
            "n": n,
            "counters": counters.tolist(),
        }


def _estimate_records(
    opened: Collector, task: Any, candidates: list[str] | None
) -> Iterator[dict[str, Any]]:
    from ldp_telemetry.aggregator.core.analysis.estimates import answer
    from ldp_telemetry.aggregator.core.analysis.query import Window, parse_candidates
    from ldp_telemetry.aggregator.core.problems import ApiError
    from ldp_telemetry.shared.contract import BELOW_MIN_BATCH_SIZE

    limit = int(opened.config["MAX_CANDIDATES"])
    cells = int(opened.config["MAX_ESTIMATE_CELLS"])
    checked = parse_candidates(task, candidates, limit) if candidates else None
    skipped = 0
    for bucket in opened.store.buckets(task):
        window = Window(bucket, bucket + task.time_precision)
        try:
            body = answer(task, checked, window, opened.store, max_cells=cells)
        except ApiError as error:
            if error.code != BELOW_MIN_BATCH_SIZE:
                raise
            skipped += 1
            continue
        for row in body["estimates"]:
            yield {"task_id": task.task_id, "bucket": bucket, "n": body["n"], **row}
    if skipped:
        click.echo(
            f"{skipped} bucket(s) below min_batch_size {task.min_batch_size} left out", err=True
        )


def _write(
    rows: list[dict[str, Any]],
    columns: list[str],
    fmt: str,
    output: str | None,
    header: dict[str, Any],
) -> None:
    if fmt == "parquet":
        _write_parquet(rows, columns, str(output), header["task"])
        return
    stream = open(output, "w", newline="") if output else sys.stdout  # noqa: SIM115
    try:
        if fmt == "json":
            json.dump({**header, "records": rows}, stream)
            stream.write("\n")
        else:
            import csv

            # extrasaction: a numeric row's reliable/reason are in the JSON export only
            writer = csv.DictWriter(
                stream, fieldnames=columns, lineterminator="\n", extrasaction="ignore"
            )
            writer.writeheader()
            for row in rows:
                if isinstance(row.get("counters"), list):
                    row = {**row, "counters": " ".join(map(str, row["counters"]))}
                writer.writerow(row)
    finally:
        if output:
            stream.close()


def _write_parquet(
    rows: list[dict[str, Any]], columns: list[str], output: str, task: dict[str, Any]
) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq

        from ldp_telemetry.aggregator.archive.parquet import TASK_KEY
    except ImportError:
        raise click.ClickException(
            "--format parquet needs the [parquet] extra: pip install "
            "'ldp-telemetry-collector[parquet]'"
        ) from None
    types = {
        "task_id": pa.string(),
        "bucket": pa.int64(),
        "slice": pa.int64(),
        "row": pa.int64(),
        "n": pa.int64(),
        "counters": pa.list_(pa.int64()),
        "value": pa.string(),
        "estimate": pa.float64(),
        "std_error": pa.float64(),
        "ci_low": pa.float64(),
        "ci_high": pa.float64(),
    }
    schema = pa.schema([(c, types[c]) for c in columns])
    data = {c: [str(row[c]) if c == "value" else row[c] for row in rows] for c in columns}
    # The task's configuration rides along, so estimates --sums can read a sums export.
    metadata = {TASK_KEY: json.dumps(task, sort_keys=True).encode()}
    pq.write_table(pa.table(data, schema=schema).replace_schema_metadata(metadata), output)


@click.command()
@database_option
@click.argument("target", type=click.Path(dir_okay=False))
def backup(target: str) -> None:
    """Write a consistent copy of the database to TARGET while the collector serves.

    TARGET must not exist. The copy is a complete database: to restore, stop the
    collector and start it with --db TARGET (or copy TARGET over the old file).
    """
    store = open_collector().store
    try:
        store.backup(target)
    except (FileExistsError, NotImplementedError) as error:
        raise click.ClickException(str(error)) from None
    click.echo(f"backup written to {Path(target).resolve()}")


@click.command()
@database_option
def migrate() -> None:
    """Bring the database's schema up to date (the collector also does it at start).

    Migrations are transactional, so this is safe beside a serving collector; back the
    database up first (``ldp-aggregator backup``) when upgrading ldp-aggregator.
    """
    from ldp_telemetry.aggregator.store.migrations import SchemaTooNew

    try:
        store = open_collector().store  # opening the store applies what is pending
    except SchemaTooNew as error:
        raise click.ClickException(str(error)) from None
    before, after = store.schema_change
    if before == after:
        click.echo(f"schema version {after}: up to date")
    else:
        click.echo(f"schema version {before} -> {after}: migrated")
