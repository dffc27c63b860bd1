"""Breakdowns: which rows a grouped answer shows, each a set of slices to estimate.

A query's ``group_by`` and ``where`` (``query.Breakdown``) select groups of slices
(:meth:`ldp_telemetry.shared.dimensions.Dimensions.grouped`); the reports each slice holds
over the range come from the store's read of every slice (``SlicedSums.counts``), and
:func:`ldp_telemetry.shared.breakdowns.rollup.roll_up` decides the rows: a group with at
least the task's min_slice_size reports is answered alone, thinner ones are rolled up
(docs/breakdowns.md). The estimates and heavy-hitters answers then estimate each row from
its own slices' sums.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ldp_telemetry.aggregator.core.analysis.query import Breakdown
from ldp_telemetry.shared import TaskConfig, answers
from ldp_telemetry.shared.breakdowns.rollup import Label, Row, roll_up
from ldp_telemetry.shared.dimensions import Dimensions


@dataclass(frozen=True)
class PlannedRow:
    """One row to answer: its label, the slices it reads, its reports, what it rolled up."""

    dimensions: dict[str, str]
    slices: tuple[int, ...]
    n: int
    rolled_up: list[answers.RolledUp]


@dataclass(frozen=True)
class Plan:
    """A breakdown's rows and the summary the answer gives of it."""

    rows: list[PlannedRow]
    summary: answers.Breakdown


def plan(task: TaskConfig, breakdown: Breakdown, counts: Mapping[int, int]) -> Plan:
    """Return the rows a breakdown answers, given the reports per slice in its range
    (``SlicedSums.counts``, from the read the rows are then estimated from)."""
    dimensions, minimum = task.dimensions, task.min_slice_size
    if dimensions is None or minimum is None:  # parse_breakdown refused it already
        raise ValueError(f"task {task.task_id!r} declares no dimensions")
    group_by = breakdown.group_by
    positions = {d.name: d.indices for d in dimensions.declared}
    groups = {
        tuple(positions[name][value] for name, value in zip(group_by, key, strict=True)): {
            index: counts.get(index, 0) for index in indices
        }
        for key, indices in dimensions.grouped(group_by, breakdown.where).items()
    }
    result = roll_up(groups, minimum)
    summary: answers.Breakdown = {
        "group_by": list(group_by),
        "where": dict(breakdown.where),
        "min_slice_size": minimum,
        "selected": result.selected,
    }
    if not result.rows:
        summary["reason"] = (
            f"where selects {result.selected} reports in this range, fewer than the task's "
            f"min_slice_size ({minimum}): no group is shown alone; the totals count them"
        )
    rows = [_planned(dimensions, group_by, row, minimum) for row in result.rows]
    return Plan(rows, summary)


def _planned(
    dimensions: Dimensions, group_by: tuple[str, ...], row: Row, minimum: int
) -> PlannedRow:
    """Return a rolled-up row with names and values instead of value indices."""
    shared = _named(dimensions, group_by, row.label)
    pooled_under = ", ".join(f"{name}={value}" for name, value in shared.items()) or "the root"
    rolled_up: list[answers.RolledUp] = [
        {
            "dimensions": _named(dimensions, group_by, key),
            "reason": (
                f"fewer than min_slice_size ({minimum}) reports, also with every other thin "
                "group: merged into the largest row"
                if key in row.leftover
                else f"fewer than min_slice_size ({minimum}) reports: pooled with the other "
                f"thin groups under {pooled_under}"
            ),
        }
        for key in row.rolled_up
    ]
    return PlannedRow(shared, row.slices, row.n, rolled_up)


def _named(dimensions: Dimensions, group_by: tuple[str, ...], label: Label) -> dict[str, str]:
    """Return {name: value} for the label's values (None: not shared, left out)."""
    declared = {d.name: d for d in dimensions.declared}
    return {
        name: declared[name].value_at(index)
        for name, index in zip(group_by, label, strict=True)
        if index is not None
    }
