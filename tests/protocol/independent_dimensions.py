"""Public dimensions (PROTOCOL.md §1.1, §2, §11; protocol 1.1) for the independent client,
written only from the spec.

Like independent_client.py it imports nothing of this project (a test checks): the
standard library only.
"""

from __future__ import annotations

import re
from typing import Any

OTHER = "other"
NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")


def check(task: dict[str, Any]) -> None:
    """§1.1: refuse a task whose `dimensions` break the rules a device can check."""
    declared = task["dimensions"]
    if not isinstance(declared, list) or not 1 <= len(declared) <= 3:
        raise ValueError("1 to 3 dimensions")
    names = [d.get("name") for d in declared if isinstance(d, dict)]
    if len(names) != len(declared) or len(set(names)) != len(names):
        raise ValueError("each dimension an object, names distinct")
    for dimension in declared:
        values = dimension.get("values")
        if set(dimension) != {"name", "values"} or not NAME.match(str(dimension["name"])):
            raise ValueError("a dimension is {name, values}, its name ^[a-z][a-z0-9_]{0,31}$")
        if not isinstance(values, list) or not 1 <= len(values) <= 63:
            raise ValueError("1 to 63 values")
        if len(set(values)) != len(values) or not all(_is_value(v) for v in values):
            raise ValueError("distinct values of 1 to 64 code points, no control, not other")
    if not isinstance(task.get("min_slice_size"), int):
        raise ValueError("a task with dimensions serves min_slice_size")


def _is_value(value: Any) -> bool:
    return (
        isinstance(value, str)
        and 1 <= len(value) <= 64  # Python's len counts code points, as §1.1 does
        and value != OTHER
        and not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in value)
    )


def dims(task: dict[str, Any], given: dict[str, Any] | None) -> dict[str, str]:
    """§2/§11: each declared name → the app's value if listed (exact strings), else other;
    undeclared names dropped."""
    given = given or {}
    out = {}
    for dimension in task["dimensions"]:
        value = given.get(dimension["name"])
        listed = isinstance(value, str) and value in dimension["values"]
        out[dimension["name"]] = value if listed else OTHER
    return out


def slice_index(task: dict[str, Any], values: dict[str, str]) -> int:
    """§11: mixed radix in declared order, other = len(values), most significant first."""
    index = 0
    for dimension in task["dimensions"]:
        listed = dimension["values"]
        value = values[dimension["name"]]
        position = len(listed) if value == OTHER else listed.index(value)
        index = index * (len(listed) + 1) + position
    return index


def report(envelope: dict[str, Any], task: dict[str, Any], given: Any) -> dict[str, Any]:
    """§2: the report with `dims` beside the payload (after `time`, as the vectors write)."""
    common = {k: envelope[k] for k in ("report_id", "fingerprint", "time")}
    payload = {k: v for k, v in envelope.items() if k not in common}
    return {**common, "dims": dims(task, given), **payload}
