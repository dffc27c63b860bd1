"""The collector's answers to analysts, typed once: estimates and heavy hitters.

The code that builds an answer is checked against these types (mypy), and the OpenAPI
document's response schemas are derived from them (ldp_telemetry.aggregator.api.schemas),
each field's :class:`~ldp_telemetry.shared.contract.Doc` becoming its description: a field
renamed or added here is renamed or added in the document. Upload answers and problems are
typed beside the paths and codes, in :mod:`ldp_telemetry.shared.contract`.

Each answer that has optional fields is written as a class of its required fields and a
``total=False`` subclass (``NotRequired`` needs Python 3.11).
"""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from ldp_telemetry.shared.contract import Doc, OneOf


class Interval(TypedDict):
    """An estimated count and its normal-approximation confidence interval."""

    estimate: Annotated[
        float,
        Doc("the unbiased count (it can be negative or exceed n: clipping would bias it)"),
    ]
    std_error: Annotated[float, Doc("its standard error")]
    ci_low: Annotated[float, Doc("the interval's lower end, at the answer's level")]
    ci_high: Annotated[float, Doc("the interval's upper end")]


class _EstimateRowFields(Interval):
    value: Annotated[Any, Doc("the candidate (a numeric task's: the statistic's name)")]


class EstimateRow(_EstimateRowFields, total=False):
    """One candidate's estimate."""

    reliable: Annotated[
        bool,
        Doc("numeric (sw): false when the interval cannot be trusted; reason says why"),
    ]
    reason: Annotated[str, Doc("why the interval cannot be trusted")]
    normalized: Annotated[
        float, Doc("with normalize: the Norm-Sub count (the whole domain summing to n)")
    ]


class HeavyHitterRow(Interval):
    """One string found."""

    value: str
    reliable: Annotated[
        bool,
        Doc("the estimate clears a Bonferroni-corrected bound over every candidate examined"),
    ]


class CheckResult(TypedDict):
    """One test of the sums against honest devices."""

    test: Annotated[str, Doc("bit_weight, row_spread or implausible_reports")]
    z: Annotated[float, Doc("the statistic as a z-score (rounded to 3 decimals)")]
    p_value: float


class Anomaly(TypedDict):
    """The window's sums tested against honest devices, and the reports refused."""

    suspected: Annotated[bool, Doc("some check's |z| exceeds threshold_z")]
    threshold_z: float
    implausible_refused: Annotated[int, Doc("reports refused as implausible_report")]
    checks: list[CheckResult]


class ShiftPerReport(TypedDict):
    low: float
    high: float


class CountShift(TypedDict):
    down: float
    up: float


class PoisoningBound(TypedDict):
    """The worst shift of any count that fake_fraction of fake reports can cause."""

    fake_fraction: float
    fake_reports: Annotated[float, Doc("fake_fraction · n")]
    per_fake_report: Annotated[ShiftPerReport, Doc("how far one report moves a count")]
    count_shift: Annotated[CountShift, Doc("how far the fake reports move any count")]


class _CentralFields(TypedDict):
    central_epsilon: Annotated[
        float | None,
        Doc("the epsilon of the range's reports after the shuffler (null: none, see why)"),
    ]
    delta: float
    smallest_batch: Annotated[
        int | None,
        Doc(
            "the distinct uploads of the range's smallest shuffled batch (with dimensions: "
            "the smallest count of one of the answer's slices in a batch, its central "
            "epsilon's n)"
        ),
    ]


class CentralLifetime(TypedDict):
    """A device's central guarantee over every shuffled batch of the range it could be in."""

    batches: Annotated[
        int,
        Doc(
            "the batches composed: one per time bucket of the range holding a batch, its "
            "weakest (a device reports at most once per period, the SDK's default)"
        ),
    ]
    delta: Annotated[float, Doc("twice the batches' deltas summed: theirs, and as much again")]
    epsilon: Annotated[
        float,
        Doc(
            "the composed central epsilon: the privacy-loss-distribution composition of the "
            "batches' (epsilon, delta) pairs (dp-accounting), never above naive_epsilon"
        ),
    ]
    naive_epsilon: Annotated[float, Doc("the batches' epsilons summed (at their deltas summed)")]


class Central(_CentralFields, total=False):
    """What the shuffler adds to the local guarantee of a range's reports."""

    central_epsilon_reason: Annotated[str, Doc("why there is no central_epsilon")]
    lifetime: Annotated[
        CentralLifetime,
        Doc(
            "with a central_epsilon, unless the task is longitudinal: a device's composed "
            "central epsilon over the range"
        ),
    ]


class _AnswerFields(Central):
    task_id: str
    mechanism: str
    n: Annotated[int, Doc("the reports the answer is computed from")]
    epsilon: Annotated[float, Doc("the task's epsilon as asked for")]
    effective_epsilon: Annotated[float, Doc("the epsilon its reports carry")]
    level: Annotated[float, Doc("the confidence level of the intervals")]
    start: Annotated[int | None, Doc("the first bucket's start (null: the first there is)")]
    end: Annotated[int | None, Doc("buckets start before this (null: no bound)")]


class _EstimateFields(_AnswerFields):
    estimates: list[EstimateRow]


class EstimateAnswer(_EstimateFields, total=False):
    """Estimated counts with confidence intervals."""

    anomaly: Anomaly
    poisoning: Annotated[PoisoningBound, Doc("with fake_fraction")]
    buckets: Annotated[int, Doc("longitudinal tasks: the buckets the range holds")]
    breakdown: Annotated[Breakdown, Doc("with group_by or where")]
    slices: Annotated[list[EstimateSlice], Doc("with group_by or where: one per row")]


class _DiscoveryFields(TypedDict):
    levels: Annotated[int, Doc("the prefix levels searched")]
    examined: Annotated[list[int], Doc("the candidates estimated at each level")]
    reliable_z: Annotated[float, Doc("the Bonferroni-corrected z a reliable row clears")]
    heavy_hitters: list[HeavyHitterRow]


class RolledUp(TypedDict):
    """A group with too few reports to be answered alone, merged into this row."""

    dimensions: Annotated[dict[str, str], Doc("the group's values")]
    reason: Annotated[str, Doc("why it was merged, and where")]


class _SliceFields(Central):
    dimensions: Annotated[
        dict[str, str],
        Doc(
            "the group_by values of the group this row answers; a row made only of "
            "rolled-up groups names the values they share"
        ),
    ]
    n: Annotated[int, Doc("the reports of this row (its own group and the rolled-up ones)")]
    rolled_up: Annotated[
        list[RolledUp], Doc("the thin groups this row also holds (their reports count here)")
    ]


class _EstimateSliceFields(_SliceFields):
    estimates: list[EstimateRow]


class EstimateSlice(_EstimateSliceFields, total=False):
    """One row of a breakdown: a group's estimates, as the totals have them."""

    anomaly: Annotated[
        Anomaly,
        Doc("the row's sums tested against honest devices (refusals count in the totals')"),
    ]
    poisoning: Annotated[PoisoningBound, Doc("with fake_fraction, at this row's n")]
    buckets: Annotated[int, Doc("longitudinal tasks: the buckets the range holds")]


class HeavyHitterSlice(_SliceFields, _DiscoveryFields):
    """One row of a breakdown: the strings found among a group's reports."""


class _BreakdownFields(TypedDict):
    group_by: Annotated[list[str], Doc("the dimensions grouped by, in the order asked")]
    where: Annotated[dict[str, str], Doc("the dimensions' values the rows are limited to")]
    min_slice_size: Annotated[int, Doc("the fewest reports a row is answered for")]
    selected: Annotated[int, Doc("the reports where selects (every one in exactly one row)")]


class Breakdown(_BreakdownFields, total=False):
    """What the slices answer; dimensions are public, sent in the clear (not under LDP)."""

    reason: Annotated[str, Doc("why there is no row (the totals still count every report)")]


class _HeavyHitterFields(_AnswerFields, _DiscoveryFields):
    pass


class HeavyHitterAnswer(_HeavyHitterFields, total=False):
    """The most frequent strings, found without candidates."""

    breakdown: Annotated[Breakdown, Doc("with group_by or where")]
    slices: Annotated[list[HeavyHitterSlice], Doc("with group_by or where: one per row")]


class CompareSide(TypedDict):
    """The reports one side of a comparison reads."""

    where: Annotated[dict[str, str], Doc("its dimensions' values ({}: every slice)")]
    start: Annotated[int | None, Doc("its first bucket's start (null: the first there is)")]
    end: Annotated[int | None, Doc("its buckets start before this (null: no bound)")]
    n: Annotated[int, Doc("its reports")]


class _DifferenceFields(TypedDict):
    value: Annotated[Any, Doc("the candidate (a numeric task's: the statistic's name)")]
    a: Annotated[float, Doc("side a's estimate (a share of its n, or a numeric statistic)")]
    b: Annotated[float, Doc("side b's estimate")]
    difference: Annotated[float, Doc("a − b")]
    std_error: Annotated[float, Doc("its standard error (see covariance)")]
    ci_low: Annotated[float, Doc("the difference's interval, at the answer's level")]
    ci_high: float
    p_value: Annotated[float, Doc("two-sided, normal approximation, for this value alone")]
    adjusted_p: Annotated[
        float | None, Doc("Holm's adjusted p-value over the values tested (null: not tested)")
    ]
    significant: Annotated[
        bool, Doc("adjusted_p <= alpha: the family-wise error over the values is <= alpha")
    ]


class DifferenceRow(_DifferenceFields, total=False):
    """One value's difference between the two sides, as a test."""

    reason: Annotated[str, Doc("why the value was not tested")]


class CompareAnswer(TypedDict):
    """Two slices or two time ranges compared value by value."""

    task_id: str
    mechanism: str
    level: Annotated[float, Doc("the confidence level of the intervals")]
    alpha: Annotated[float, Doc("the family-wise error rate of significant: 1 − level")]
    quantity: Annotated[
        str,
        Doc("share: each count divided by its side's n; value: the estimate itself (numeric)"),
        OneOf(("share", "value")),
    ]
    covariance: Annotated[str, Doc("why std_error is what it is (independent or bounded)")]
    a: CompareSide
    b: CompareSide
    differences: list[DifferenceRow]
