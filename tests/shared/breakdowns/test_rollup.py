"""Thin groups are rolled up, never shown alone, and every selected report lands in one row."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldp_telemetry.shared.breakdowns.rollup import GroupKey, Rollup, roll_up

Coordinate = tuple[int, ...]  # a slice as its value indices (the slice's id in these tests)


# Two dimensions: platform (android 0, ios 1, web 2, other 3), app_version (5.1 0, 5.2 1, other 2).
COUNTS: dict[Coordinate, int] = {
    (0, 0): 400, (0, 1): 500, (0, 2): 10,
    (1, 0): 30, (1, 1): 900, (1, 2): 25,
    (2, 0): 20, (2, 1): 20,
    (3, 1): 5,
}  # fmt: skip


def rolled(
    counts: Mapping[Coordinate, int], group_by: list[int], where: dict[int, int], minimum: int
) -> Rollup:
    """Group the slices as Dimensions.grouped would, each numbered by its place in sorted
    order (``coordinates`` turns numbers back into coordinates), and roll them up."""
    groups: dict[GroupKey, dict[int, int]] = {}
    for number, c in enumerate(sorted(counts)):
        if all(c[d] == v for d, v in where.items()):
            groups.setdefault(tuple(c[d] for d in group_by), {})[number] = counts[c]
    return roll_up(groups, minimum)


def coordinates(counts: Mapping[Coordinate, int], slices: tuple[int, ...]) -> list[Coordinate]:
    ordered = sorted(counts)
    return [ordered[i] for i in slices]


def labels(result: Rollup) -> list[tuple[int | None, ...]]:
    return [row.label for row in result.rows]


def test_answered_groups_alone_thin_ones_pooled_under_their_parent() -> None:
    result = rolled(COUNTS, group_by=[0, 1], where={}, minimum=50)
    by_label = {row.label: row for row in result.rows}
    assert labels(result) == [(0, 0), (0, 1), (1, 1), (1, None), (None, None)]
    assert result.selected == sum(COUNTS.values())
    # ios 5.1 (30) and ios other (25) are thin; together 55 under ios.
    assert by_label[(1, None)].rolled_up == ((1, 0), (1, 2))
    assert by_label[(1, None)].own is None and by_label[(1, None)].n == 55
    # web's two thin versions pool to 40 < 50: up to the root with android other (10) and
    # platform other (5): 55, answered as one row that shares no value.
    root = by_label[(None, None)]
    assert root.rolled_up == ((0, 2), (2, 0), (2, 1), (3, 1))
    assert root.own is None and root.n == 55


def test_a_thin_root_pool_goes_into_the_largest_row() -> None:
    counts: dict[Coordinate, int] = {(0, 0): 100, (0, 1): 300, (1, 0): 20, (1, 1): 20}
    result = rolled(counts, group_by=[0, 1], where={}, minimum=50)
    assert [(row.own, row.rolled_up, row.n) for row in result.rows] == [
        ((0, 0), (), 100),
        ((0, 1), ((1, 0), (1, 1)), 340),
    ]
    assert coordinates(counts, result.rows[1].slices) == [(0, 1), (1, 0), (1, 1)]


def test_group_by_order_decides_what_is_dropped_first() -> None:
    # By version then platform: ios 5.1 (30) and web 5.1 (20) pool under version 5.1.
    result = rolled(COUNTS, group_by=[1, 0], where={}, minimum=50)
    pooled = {row.label: row.rolled_up for row in result.rows if row.own is None}
    assert pooled[(0, None)] == ((0, 1), (0, 2))  # keys in group_by order: (version, platform)


def test_where_selects_and_a_thin_selection_is_not_answered_by_slice() -> None:
    # Version 5.1: android 400, ios 30, web 20; the thin two pool to 50.
    result = rolled(COUNTS, group_by=[0], where={1: 0}, minimum=50)
    assert [(row.label, row.n, row.rolled_up) for row in result.rows] == [
        ((0,), 400, ()),
        ((None,), 50, ((1,), (2,))),
    ]
    higher = rolled(COUNTS, group_by=[0], where={1: 0}, minimum=60)
    assert [(row.label, row.n, row.rolled_up) for row in higher.rows] == [((0,), 450, ((1,), (2,)))]
    thin = rolled(COUNTS, group_by=[1], where={0: 2}, minimum=50)
    assert thin.rows == () and thin.selected == 40


def test_no_group_by_is_one_row() -> None:
    result = rolled(COUNTS, group_by=[], where={0: 0}, minimum=50)
    assert [(row.label, row.own, row.n) for row in result.rows] == [((), (), 910)]


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="minimum"):
        rolled(COUNTS, [0], {}, 0)
    with pytest.raises(ValueError, match="same dimensions"):
        roll_up({(0,): {0: 5}, (0, 1): {1: 5}}, 5)


@st.composite
def workloads(draw: st.DrawFn) -> tuple[dict[Coordinate, int], list[int], dict[int, int], int]:
    sizes = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    cells = [tuple(c) for c in _product(sizes)]
    counts = {c: draw(st.integers(0, 120)) for c in cells}
    group_by = draw(st.permutations(range(len(sizes))).map(list))
    group_by = group_by[: draw(st.integers(0, len(sizes)))]
    where = {
        d: draw(st.integers(0, sizes[d] - 1))
        for d in range(len(sizes))
        if d not in group_by and draw(st.booleans())
    }
    return counts, group_by, where, draw(st.integers(1, 150))


def _product(sizes: list[int]) -> list[list[int]]:
    cells: list[list[int]] = [[]]
    for size in sizes:
        cells = [[*cell, v] for cell in cells for v in range(size)]
    return cells


@settings(max_examples=400, deadline=None)
@given(workloads())
def test_every_report_in_exactly_one_answered_row_never_a_thin_group_alone(
    workload: tuple[Mapping[Coordinate, int], list[int], dict[int, int], int],
) -> None:
    counts, group_by, where, minimum = workload
    result = rolled(counts, group_by, where, minimum)
    chosen = {c: n for c, n in counts.items() if n and all(c[d] == v for d, v in where.items())}
    assert result.selected == sum(chosen.values())
    if result.selected < minimum:
        assert result.rows == ()
        return
    held = Counter(c for row in result.rows for c in coordinates(counts, row.slices))
    assert held == Counter(chosen.keys())  # a partition: each selected slice in exactly one row
    groups: Counter[tuple[int, ...]] = Counter()
    for c, n in chosen.items():
        groups[tuple(c[d] for d in group_by)] += n
    for row in result.rows:
        assert row.n == sum(chosen[c] for c in coordinates(counts, row.slices)) >= minimum
        if row.own is not None:  # a group answered alone is never thin
            assert groups[row.own] >= minimum and row.label == row.own
        for key in row.rolled_up:
            assert groups[key] < minimum
            if row.own is None:  # a pool is labelled by what its groups share
                assert all(v is None or v == key[i] for i, v in enumerate(row.label))
    owns = [row.own for row in result.rows if row.own is not None]
    assert sorted(owns) == sorted(k for k, n in groups.items() if n >= minimum)
    # Dropped last dimension first: a pool answered with depth j kept would have been
    # thin with depth j + 1 kept; what stays thin at the root goes to the largest row.
    leftovers = [row for row in result.rows if row.leftover]
    assert len(leftovers) <= 1
    if leftovers:
        assert leftovers[0].n == max(row.n for row in result.rows)
        assert sum(groups[key] for key in leftovers[0].leftover) < minimum
    depths = {}  # each pooled group: the depth (group_by dimensions kept) it was answered at
    for row in result.rows:
        pooled = [key for key in row.rolled_up if key not in row.leftover]
        if row.own is None and pooled:
            differ = [i for i in range(len(group_by)) if len({k[i] for k in pooled}) > 1]
            depths.update({key: differ[0] if differ else len(group_by) - 1 for key in pooled})
    for key, depth in depths.items():
        # Its pool one level deeper: the thin groups under the same prefix, less those
        # answered in pools deeper still.
        under = [
            k
            for k in groups
            if k[: depth + 1] == key[: depth + 1]
            and groups[k] < minimum
            and depths.get(k, -1) <= depth
        ]
        assert sum(groups[k] for k in under) < minimum
