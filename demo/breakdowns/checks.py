"""Ask the collector for the scenario's breakdowns over HTTP and check them against the truth.

Every check uses the public interfaces only (the analyst's estimates with ``group_by``, an
upload as a device would send it):

- by platform × app version, by platform, and by app version: every answered row's n is
  exactly its groups' devices (its own group and those rolled up into it, each device
  placed by hand: an unlisted platform or version in ``other``), the rows' n add up to
  the task's n and to the devices, every group is in exactly one row, and each value's
  estimate lies within ``Z_LIMIT`` standard errors of the row's true count;
- the thin slice (30 devices) is never a row of its own but rolled up into exactly one;
- a raw report whose dimensions break the rules is rejected with its reason, one reason
  per rule, and nothing of it is accepted.

``exact`` failures must never happen; a ``statistical`` one (|z| > 4) happens about
6·10⁻⁵ of the time per value.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

import requests

from demo.breakdowns.scenario import NAMES, THIN, Device, Slice, truth
from demo.server import Collector
from ldp_telemetry.shared import Envelope, TaskConfig, encode_report, new_report_id
from ldp_telemetry.shared.codec import b64encode

Z_LIMIT = 4.0
BAD_DIMS = {  # reason → the dims of a raw report that must be refused with it
    "dimension_value_unknown": {"platform": "ios", "app_version": "9.9"},
    "dimension_undeclared": {"platform": "ios", "app_version": "5.2", "model": "x"},
    "dimensions_missing": {"platform": "ios"},
}


@dataclass(frozen=True)
class Value:
    """One value's estimate in one row, beside the row's true count."""

    value: str
    truth: int
    estimate: float
    std_error: float

    @property
    def z(self) -> float:
        return (self.estimate - self.truth) / self.std_error


@dataclass(frozen=True)
class Row:
    """One answered row of a grouping: its label, its own group (if any), the groups rolled
    up into it, its n and its groups' true n, and its values."""

    group_by: str
    label: str
    own: tuple[Slice, ...]
    rolled_up: tuple[Slice, ...]
    n: int
    true_n: int
    values: tuple[Value, ...]


@dataclass
class Outcome:
    """Every row checked, the rejections seen, and what failed (by kind)."""

    rows: list[Row] = field(default_factory=list)
    rejected: dict[str, int] = field(default_factory=dict)
    exact: list[str] = field(default_factory=list)
    statistical: list[str] = field(default_factory=list)

    @property
    def max_z(self) -> float:
        return max((abs(v.z) for row in self.rows for v in row.values), default=0.0)


def estimates(collector: Collector, task_id: str, group_by: list[str]) -> dict[str, Any]:
    """Return the analyst's estimates answer, grouped by ``group_by``."""
    return collector.post(
        f"/v1/tasks/{task_id}/estimates", {"group_by": group_by}, collector.analyst_token
    )


def check(collector: Collector, task: TaskConfig, devices: list[Device]) -> Outcome:
    """Run every check of the module's docstring; return the outcome."""
    outcome = Outcome()
    answer = estimates(collector, task.task_id, list(NAMES))
    if not answer["n"] == answer["breakdown"]["selected"] == len(devices):
        outcome.exact.append(
            f"task n {answer['n']}, selected {answer['breakdown']['selected']}, "
            f"devices {len(devices)}"
        )
    _check_rows(answer, NAMES, devices, outcome)
    if sum(THIN in row.rolled_up for row in outcome.rows) != 1:
        outcome.exact.append(f"the thin slice {THIN} is not rolled up into one row")
    for name in NAMES:  # by one dimension: the unlisted values are counted in other
        _check_rows(estimates(collector, task.task_id, [name]), (name,), devices, outcome)
    outcome.rejected = refuse_raw(collector, task, outcome)
    return outcome


def _check_rows(
    answer: dict[str, Any], names: tuple[str, ...], devices: list[Device], out: Outcome
) -> None:
    """Check each row of a grouped answer: its n exactly its groups' devices, its estimates
    within Z_LIMIT SE of their truth, every group in exactly one row, THIN never alone."""
    positions = [NAMES.index(name) for name in names]
    truths: dict[Slice, Counter[str]] = {}
    for group, counts in truth(devices).items():
        truths.setdefault(tuple(group[i] for i in positions), Counter()).update(counts)
    placed: Counter[Slice] = Counter()
    rows = []
    for block in answer["slices"]:
        label = tuple(block["dimensions"].get(name) for name in names)
        rolled = tuple(tuple(r["dimensions"][name] for name in names) for r in block["rolled_up"])
        own = (label,) if None not in label else ()
        placed.update(own + rolled)
        counts = sum((truths.get(g, Counter()) for g in own + rolled), Counter[str]())
        values = tuple(
            Value(e["value"], counts[e["value"]], e["estimate"], e["std_error"])
            for e in block["estimates"]
        )
        text = "/".join(v or "*" for v in label)
        rows.append(Row(" × ".join(names), text, own, rolled, block["n"], counts.total(), values))
        if names == NAMES and own == (THIN,):
            out.exact.append(f"the thin slice {THIN} is shown alone")
    for row in rows:
        if row.n != row.true_n:
            out.exact.append(f"row {row.label}: n {row.n}, its groups hold {row.true_n} devices")
        out.statistical += [
            f"row {row.label} value {v.value}: z = {v.z:.2f}"
            for v in row.values
            if abs(v.z) > Z_LIMIT
        ]
    if sum(row.n for row in rows) != answer["breakdown"]["selected"]:
        out.exact.append(f"by {names}: the rows' n do not add up to the reports selected")
    if placed != Counter(truths.keys()):
        out.exact.append(f"by {names}: groups not in exactly one row: {placed}")
    out.rows += rows


def refuse_raw(collector: Collector, task: TaskConfig, out: Outcome) -> dict[str, int]:
    """Upload raw reports whose dims break each rule; return the reasons the collector gave."""
    envelope = Envelope(new_report_id(), task.fingerprint, task.floor_time(time.time()), 0)
    good = encode_report(task, replace(envelope, slice=5))
    reports = [
        {**good, "report_id": b64encode(new_report_id()), "dims": dims}
        for dims in BAD_DIMS.values()
    ]
    response = requests.post(
        f"{collector.url}/v1/tasks/{task.task_id}/reports",
        data=json.dumps({"reports": reports}),
        headers={"Content-Type": "application/json"},
        timeout=60,
    )
    answer = response.json()
    reasons = [r["reason"] for r in answer.get("rejected", [])]
    if response.status_code != 200 or answer.get("accepted") != 0 or reasons != list(BAD_DIMS):
        out.exact.append(f"raw reports with bad dims: {response.status_code} {answer}")
    return dict(Counter(reasons))
