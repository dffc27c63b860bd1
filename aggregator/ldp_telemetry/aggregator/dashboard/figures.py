"""What the pages show, computed by the JSON API's own functions (no second estimator).

Estimates come from :func:`ldp_telemetry.aggregator.core.analysis.estimates.answer` (over the chosen
range, and once per time bucket for the lines over time), discovered strings from
:func:`ldp_telemetry.aggregator.core.analysis.heavy_hitters.answer`, report counts from the store's
sums (the ``n`` the API answers), the planner's figures from
:func:`ldp_telemetry.shared.mechanisms.registry.plan` (as ``ldp-aggregator tasks plan``). Ingest and
rejection counts exist only as Prometheus counters of the running collector: they are read from
there and labelled as such.
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from flask import current_app

from ldp_telemetry.aggregator.core.analysis import compare, estimates, heavy_hitters
from ldp_telemetry.aggregator.core.analysis.query import Breakdown, Window
from ldp_telemetry.aggregator.core.metrics import current_registry
from ldp_telemetry.aggregator.core.problems import ApiError
from ldp_telemetry.aggregator.dashboard.resources import get_store
from ldp_telemetry.shared import ParameterError, TaskConfig
from ldp_telemetry.shared.contract import BELOW_MIN_BATCH_SIZE
from ldp_telemetry.shared.mechanisms.features import discoverer

CACHE_ENTRIES = 4096  # answers kept per process (a cms answer of 20 values is ~3 kB)
MAX_SERIES_BUCKETS = 60  # lines over time show the latest buckets of the range, at most
TOP_BARS = 20
HH_TOP, HH_SURVIVORS = 20, 64  # the heavy-hitters endpoint's defaults are 20 and 64
HH_DEFAULT_CANDIDATES = 5  # an hh task's lines follow its top discovered strings by default


@dataclass(frozen=True)
class TaskSummary:
    """A task with the reports its sums hold and the buckets they fall in."""

    config: TaskConfig
    reports: int
    buckets: list[int]

    @property
    def last_bucket(self) -> int | None:
        """Return the start of the latest bucket holding reports."""
        return self.buckets[-1] if self.buckets else None


def unbounded(window: Window, total: int) -> int | None:
    """Return a task's total as the window's report count if the window holds every bucket."""
    return total if window.start is None and window.end is None else None


@dataclass(frozen=True)
class IngestCounts:
    """Reports accepted per task and rejected per reason since the collector started."""

    accepted: dict[str, int] = field(default_factory=dict)
    rejected: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class BucketAnswer:
    """One time bucket: its reports and the estimates body (None below min_batch_size)."""

    start: int
    n: int
    body: Mapping[str, Any] | None


@dataclass(frozen=True)
class OverTime:
    """Buckets of a range, oldest first; ``hidden``: older buckets left out."""

    buckets: list[BucketAnswer]
    hidden: int


def count(config: TaskConfig) -> int:
    """Return the reports a task's sums hold, all buckets (the API's ``n`` for no range)."""
    with get_store().read_sums(config, None, None) as sums:
        return int(sums.total)


def summarize(config: TaskConfig) -> TaskSummary:
    """Return a task's report count (all buckets) and its buckets."""
    return TaskSummary(config, count(config), get_store().buckets(config))


def ingest_counts() -> IngestCounts:
    """Return the collector's ingest counters (every worker of this run, as /metrics)."""
    registry = current_registry()
    accepted: Counter[str] = Counter()
    rejected: Counter[str] = Counter()
    for metric in registry.collect():
        for sample in metric.samples:
            if sample.name == "ldp_reports_accepted_total":
                accepted[sample.labels["task_id"]] += int(sample.value)
            elif sample.name == "ldp_reports_rejected_total":
                rejected[sample.labels["reason"]] += int(sample.value)
    return IngestCounts(dict(accepted), dict(sorted(rejected.items())))


def needs_candidates(config: TaskConfig) -> bool:
    """Return whether the task's estimates need a candidate list (a sketch knows no domain)."""
    try:
        config.mechanism_object.parse_candidates(None)
    except ParameterError:
        return True
    return False


def discovers(config: TaskConfig) -> bool:
    """Return whether the task's mechanism finds its frequent strings without candidates."""
    return discoverer(config.mechanism_object) is not None


def bucket_counts(config: TaskConfig, window: Window, buckets: list[int]) -> OverTime:
    """Return the reports in each of the task's ``buckets`` in the window (the latest ones)."""
    store = get_store()
    starts = [b for b in buckets if window.holds(b)]
    shown = starts[-MAX_SERIES_BUCKETS:]
    answers = []
    for start in shown:
        with store.read_sums(config, start, start + config.time_precision) as sums:
            answers.append(BucketAnswer(start, int(sums.total), None))
    return OverTime(answers, len(starts) - len(shown))


class Answers:
    """Answers of the API's functions already computed in this process, reused while exact.

    A task's sums only ever grow, and every report adds one to ``n``: the same window with
    the same ``n`` holds the same sums, so the same question has the same answer. The key is
    the question and the ``n`` a fresh count of the window finds (one cheap query); the
    answer stored is the one computed, under the ``n`` it was computed from. Per app (its
    store), bounded, least recently used first out.
    """

    EXTENSION = "ldp_dashboard_answers"

    def __init__(self, size: int = CACHE_ENTRIES) -> None:
        self.size, self.lock = size, threading.Lock()
        self.kept: OrderedDict[Hashable, tuple[Mapping[str, Any] | None, ApiError | None]] = (
            OrderedDict()
        )

    @classmethod
    def of_app(cls) -> Answers:
        """Return the current app's answers."""
        return current_app.extensions.setdefault(cls.EXTENSION, cls())

    def get(
        self,
        config: TaskConfig,
        question: Hashable,
        window: Window,
        compute: Callable[[], Mapping[str, Any]],
        n: int | None = None,
    ) -> Mapping[str, Any]:
        """Return ``compute()`` for the window, or the kept answer; raise its problem.

        ``n``: the window's report count if the caller has just read it.
        """
        if n is None:
            with get_store().read_sums(config, window.start, window.end) as sums:
                n = int(sums.total)
        key = (config.task_id, config.fingerprint, question, window)
        with self.lock:
            kept = self.kept.get((key, n))
            if kept is not None:
                self.kept.move_to_end((key, n))
        if kept is None:
            try:
                kept = (compute(), None)
            except ApiError as error:
                if "n" not in error.extra:  # only answers that depend on n alone are kept
                    raise
                kept = (None, error)
            computed_n = kept[0]["n"] if kept[0] is not None else kept[1].extra["n"]
            with self.lock:
                self.kept[(key, int(computed_n))] = kept
                while len(self.kept) > self.size:
                    self.kept.popitem(last=False)
        if kept[1] is not None:
            raise kept[1]
        assert kept[0] is not None
        return kept[0]


def estimate(
    config: TaskConfig,
    candidates: list[Any] | None,
    window: Window,
    n: int | None = None,
    breakdown: Breakdown | None = None,
) -> Mapping[str, Any]:
    """Return :func:`ldp_telemetry.aggregator.core.analysis.estimates.answer` for the window (reused
    while exact).

    The answer's ``anomaly`` also counts the window's refused reports, which do not
    change n: their count is part of the question.
    """
    store = get_store()
    refused = store.refusals(config, window.start, window.end)
    grouped = None if breakdown is None else breakdown.group_by
    question = ("estimates", None if candidates is None else tuple(candidates), refused, grouped)
    max_cells = int(current_app.config["MAX_ESTIMATE_CELLS"])

    def compute() -> Mapping[str, Any]:
        return estimates.answer(
            config, candidates, window, store, max_cells=max_cells, breakdown=breakdown
        )

    return Answers.of_app().get(config, question, window, compute, n)


def over_time(
    config: TaskConfig, candidates: list[Any] | None, window: Window, buckets: list[int]
) -> OverTime:
    """Return the estimates of each of the task's ``buckets`` in the window (the latest ones)."""
    starts = [b for b in buckets if window.holds(b)]
    shown = starts[-MAX_SERIES_BUCKETS:]
    answers = []
    for start in shown:
        one = Window(start, start + config.time_precision, window.level)
        try:
            body = estimate(config, candidates, one)
        except ApiError as error:
            if error.code != BELOW_MIN_BATCH_SIZE:
                raise
            answers.append(BucketAnswer(start, int(error.extra["n"]), None))
        else:
            answers.append(BucketAnswer(start, int(body["n"]), body))
    return OverTime(answers, len(starts) - len(shown))


def top_estimates(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Return an estimates body's rows, largest estimate first, at most TOP_BARS."""
    rows = sorted(body["estimates"], key=lambda row: row["estimate"], reverse=True)
    return rows[:TOP_BARS]


def range_answer(
    config: TaskConfig,
    candidates: list[Any] | None,
    window: Window,
    n: int | None = None,
    breakdown: Breakdown | None = None,
) -> tuple[Mapping[str, Any] | None, ApiError | None]:
    """Return the estimates over the whole window, or the problem the API would answer."""
    try:
        return estimate(config, candidates, window, n, breakdown), None
    except ApiError as error:
        return None, error


def changes(
    config: TaskConfig, candidates: list[Any] | None, buckets: list[int], level: float
) -> tuple[Mapping[str, Any] | None, str | None]:
    """Return :func:`ldp_telemetry.aggregator.core.analysis.compare.answer` of the last two
    buckets (the latest against the one before), or why there is none."""
    if len(buckets) < 2:
        return None, "one bucket holds reports: there is no earlier period to compare with"
    before, latest = buckets[-2], buckets[-1]
    body: dict[str, Any] = {
        "level": level,
        "a": {"start": latest, "end": latest + config.time_precision},
        "b": {"start": before, "end": before + config.time_precision},
    }
    if candidates is not None:
        body["candidates"] = candidates
    store, limit = get_store(), int(current_app.config["MAX_CANDIDATES"])
    cells = int(current_app.config["MAX_ESTIMATE_CELLS"])
    both = Window(before, latest + config.time_precision, level)  # reused while its n holds
    question = ("changes", None if candidates is None else tuple(candidates))

    def compute() -> Mapping[str, Any]:
        query = compare.parse_compare(config, body, limit)
        found = compare.answer(config, query, store, max_cells=cells)
        return {"n": found["a"]["n"] + found["b"]["n"], "changes": found}

    try:
        return Answers.of_app().get(config, question, both, compute)["changes"], None
    except ApiError as error:
        return None, error.detail


def discovered(
    config: TaskConfig, window: Window, n: int | None = None
) -> tuple[Mapping[str, Any] | None, ApiError | None]:
    """Return the heavy-hitters body over the window, or the problem the API would answer."""
    try:
        found = Answers.of_app().get(
            config,
            ("heavy_hitters", HH_TOP, HH_SURVIVORS),
            window,
            lambda: heavy_hitters.answer(config, HH_TOP, HH_SURVIVORS, window, get_store()),
            n,
        )
        return found, None
    except ApiError as error:
        return None, error


def when(seconds: int | None, precision: int = 60, short: bool = False) -> str:
    """Return a UTC time as text: a date for whole-day buckets, else date and minute.

    ``short`` leaves out the year (axis labels).
    """
    if seconds is None:
        return "–"
    moment = datetime.fromtimestamp(seconds, timezone.utc)
    day = "%m-%d" if short else "%Y-%m-%d"
    return moment.strftime(day if precision % 86_400 == 0 else f"{day} %H:%M")
