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

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ldp_telemetry.aggregator.core.analysis.query import Breakdown
from ldp_telemetry.shared import TaskConfig, answers
from ldp_telemetry.shared.breakdowns.rollup import GroupKey, Label, Row, roll_up
from ldp_telemetry.shared.dimensions import Dimension, Dimensions


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
    groups = {
        key: {index: counts.get(index, 0) for index in indices}
        for key, indices in _groups(dimensions, group_by, tuple(sorted(breakdown.where.items())))
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
    declared = {dimension.name: dimension for dimension in dimensions.declared}
    named = functools.partial(_named, [(name, declared[name]) for name in group_by])
    rows = [_planned(named, row, minimum) for row in result.rows]
    return Plan(rows, summary)


@functools.lru_cache(maxsize=256)
def _groups(
    dimensions: Dimensions, group_by: tuple[str, ...], where: tuple[tuple[str, str], ...]
) -> tuple[tuple[GroupKey, tuple[int, ...]], ...]:
    """Return each group's value indices (one per group_by dimension) and slices, in
    order: fixed by the task's dimensions and the query, so kept for the next answer."""
    positions = {d.name: d.indices for d in dimensions.declared}
    return tuple(
        (
            tuple(positions[name][value] for name, value in zip(group_by, key, strict=True)),
            tuple(indices),
        )
        for key, indices in dimensions.grouped(group_by, dict(where)).items()
    )


def _planned(named: Callable[[Label], dict[str, str]], row: Row, minimum: int) -> PlannedRow:
    """Return a rolled-up row with names and values instead of value indices."""
    shared = named(row.label)
    pooled_under = ", ".join(f"{name}={value}" for name, value in shared.items()) or "the root"
    rolled_up: list[answers.RolledUp] = [
        {
            "dimensions": named(key),
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


def _named(dimensions: list[tuple[str, Dimension]], label: Label) -> dict[str, str]:
    """Return {name: value} for the label's values (None: not shared, left out), given the
    group_by dimensions in order."""
    return {
        name: dimension.value_at(index)
        for (name, dimension), index in zip(dimensions, label, strict=True)
        if index is not None
    }
