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

from ldp_telemetry.shared.contract import Doc


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
        int | None, Doc("the distinct uploads of the range's smallest shuffled batch")
    ]


class Central(_CentralFields, total=False):
    """What the shuffler adds to the local guarantee of a range's reports."""

    central_epsilon_reason: Annotated[str, Doc("why there is no central_epsilon")]


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


class HeavyHitterAnswer(_AnswerFields):
    """The most frequent strings, found without candidates."""

    levels: Annotated[int, Doc("the prefix levels searched")]
    examined: Annotated[list[int], Doc("the candidates estimated at each level")]
    reliable_z: Annotated[float, Doc("the Bonferroni-corrected z a reliable row clears")]
    heavy_hitters: list[HeavyHitterRow]
