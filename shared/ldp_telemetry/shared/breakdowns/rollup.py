"""Which rows a grouped answer may show: thin groups rolled up, never shown alone.

Symbols: a task declares dimensions; a *slice* holds one value of each (its index is
:mod:`ldp_telemetry.shared.dimensions`'s). A query's ``group_by`` lists L dimensions in the
analyst's order and its ``where`` fixes others; a *group* is one tuple of the group_by
dimensions' value indices, holding the selected slices that agree on them
(``Dimensions.grouped`` finds them). ``minimum`` is the task's min_slice_size.

The rule (Brave's P3A rolls a thin record up to the deepest prefix of attributes that enough
clients share; docs/breakdowns.md): a group with at least ``minimum`` reports is
answered alone. The thin ones (fewer) are pooled under their parent — the last group_by
dimension dropped — and a parent's pool is answered as one row when it holds at least
``minimum`` reports; a thinner pool moves up again (the next dimension dropped). A pool still
thin with every group_by dimension dropped is merged into the largest answered row. So every
selected report is in exactly one row, every row holds at least ``minimum`` reports, and a
thin group is never shown alone. A pool holds only the thin groups: the parent's answered
groups are not in it, so the answer cannot be subtracted from itself to isolate one.

If the selected reports number fewer than ``minimum`` in all, nothing is answered by slice
(the task's totals, which count them, are answered apart and never suppressed).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

GroupKey = tuple[int, ...]  # one value index per group_by dimension
Label = tuple[int | None, ...]  # per group_by dimension: the value a row's groups share, or None
UNSHARED = 1 << 30  # sorts a label's None after every value index


@dataclass(frozen=True)
class Row:
    """One answered row: its own group (None: a pool of thin groups only), the thin groups
    rolled up into it (``leftover``: those of them that stayed thin with every dimension
    dropped), the slices it reads, and its reports."""

    label: Label
    own: GroupKey | None
    rolled_up: tuple[GroupKey, ...]
    slices: tuple[int, ...]
    n: int
    leftover: tuple[GroupKey, ...] = ()


@dataclass(frozen=True)
class Rollup:
    """The rows of a grouped answer, and the reports ``where`` selected (``selected``)."""

    rows: tuple[Row, ...]
    selected: int


def roll_up(groups: Mapping[GroupKey, Mapping[int, int]], minimum: int) -> Rollup:
    """Return the rows to answer, given each group's reports per slice index.

    Every key of ``groups`` has one value index per group_by dimension, in their order.
    """
    if minimum < 1:
        raise ValueError(f"minimum must be at least 1, got {minimum}")
    lengths = {len(key) for key in groups}
    if len(lengths) > 1:
        raise ValueError(f"every group names the same dimensions, got lengths {sorted(lengths)}")
    depth_of_keys = lengths.pop() if lengths else 0
    slices: dict[GroupKey, list[int]] = {}
    reports: dict[GroupKey, int] = {}
    for key in sorted(groups):
        held = {index: n for index, n in groups[key].items() if n > 0}
        if held:
            slices[key], reports[key] = sorted(held), sum(held.values())
    selected = sum(reports.values())
    if selected < minimum:
        return Rollup((), selected)
    rows = [_row(slices, reports, key, ()) for key in reports if reports[key] >= minimum]
    pending = {key: [key] for key in reports if reports[key] < minimum}
    for depth in range(depth_of_keys - 1, -1, -1):  # drop the last dimension, then the next
        pools: dict[GroupKey, list[GroupKey]] = defaultdict(list)
        for prefix, members in pending.items():
            pools[prefix[:depth]].extend(members)
        pending = {}
        for prefix, members in pools.items():
            if sum(reports[key] for key in members) >= minimum:
                rows.append(_row(slices, reports, None, tuple(members)))
            else:
                pending[prefix] = members
    if pending:  # a thin pool with every dimension dropped: into the largest answered row
        (leftover,) = pending.values()
        largest = max(range(len(rows)), key=lambda i: (rows[i].n, -i))
        host = rows[largest]
        rows[largest] = _row(slices, reports, host.own, host.rolled_up + tuple(leftover), leftover)
    rows.sort(key=lambda row: tuple(UNSHARED if v is None else v for v in row.label))
    return Rollup(tuple(rows), selected)


def _row(
    slices: Mapping[GroupKey, list[int]],
    reports: Mapping[GroupKey, int],
    own: GroupKey | None,
    rolled_up: tuple[GroupKey, ...],
    leftover: Sequence[GroupKey] = (),
) -> Row:
    """Return the row holding ``own`` (if any) and ``rolled_up``, labelled by what they share."""
    groups = ((own,) if own is not None else ()) + tuple(sorted(rolled_up))
    label = own if own is not None else _shared(groups)
    held = tuple(sorted(c for key in groups for c in slices[key]))
    n = sum(reports[key] for key in groups)
    return Row(label, own, tuple(sorted(rolled_up)), held, n, tuple(sorted(leftover)))


def _shared(groups: Sequence[GroupKey]) -> Label:
    """Return, per group_by dimension, the value every group has (None where they differ)."""
    first = groups[0]
    return tuple(
        value if all(key[i] == value for key in groups) else None for i, value in enumerate(first)
    )
