"""A small task of every registered kind, its reports and their sums, for the store tests.

The store tests iterate :data:`ldp_telemetry.shared.mechanisms.registry.MECHANISMS`; :data:`CASES`
says what each kind is built with. A kind added to the registry without a case here fails
``test_every_registered_kind_has_a_store_case`` (and every store test of that kind).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ldp_telemetry.shared import TaskConfig
from ldp_telemetry.shared.codec import Payload
from ldp_telemetry.shared.sums import Sums

DOMAIN = ("a", "b", "c", "d")
WORDS = ("ab", "ba", "aab", "b")


class KindCase:
    """A kind's task parameters, the values its devices hold, and what an estimate asks."""

    def __init__(
        self, fields: dict[str, Any], values: tuple[Any, ...], candidates: list[Any] | None
    ) -> None:
        self.fields, self.values, self.candidates = fields, values, candidates


# Small on purpose (a few rows, a few reports): these tests check exactness, not accuracy.
CASES: dict[str, KindCase] = {
    "rr": KindCase({"epsilon": 1.0}, (True, False, False), [True, False]),
    "grr": KindCase({"epsilon": 1.0, "domain": list(DOMAIN)}, DOMAIN, ["b", "a"]),
    "cms": KindCase({"epsilon": 3.0, "k": 16, "m": 32}, WORDS, [*WORDS, "nope"]),
    "hcms": KindCase({"epsilon": 3.0, "k": 16, "m": 32}, WORDS, [*WORDS, "nope"]),
    "olh": KindCase({"epsilon": 2.0, "k": 16}, WORDS, [*WORDS, "nope"]),
    "hh": KindCase(
        {"epsilon": 4.0, "k": 8, "m": 16, "alphabet": "ab", "max_length": 3}, WORDS, [*WORDS, "bb"]
    ),
    "numeric": KindCase(
        {"epsilon": 1.0, "lo": 0.0, "hi": 10.0, "buckets": 8}, (0.5, 3.0, 6.0, 9.5), None
    ),
    "oue": KindCase({"epsilon": 1.0, "domain": list(DOMAIN)}, DOMAIN, None),
    "ss": KindCase({"epsilon": 1.0, "domain": list(DOMAIN)}, DOMAIN, None),
}


def kind_task(kind: str, task_id: str | None = None) -> TaskConfig:
    """Return a small task of a registered kind (id: ``t-<kind>`` unless given)."""
    return TaskConfig.create(
        task_id=task_id or f"t-{kind}", mechanism=kind, min_batch_size=1, **CASES[kind].fields
    )


def kind_reports(task: TaskConfig, count: int, rng: np.random.Generator) -> list[Payload]:
    """Return ``count`` privatized reports of the case's values, as the collector decodes them."""
    mechanism = task.mechanism_object
    values = CASES[task.mechanism].values
    privatized = [mechanism.privatize(values[i % len(values)], rng) for i in range(count)]
    return [mechanism.decode_payload(mechanism.encode_payload(r)) for r in privatized]


def dense_sums(task: TaskConfig, reports: list[Payload]) -> Sums:
    """Return the shared accumulator of the reports (what the stored sums must equal)."""
    sums = task.mechanism_object.new_sums()
    for report in reports:
        sums.add(report)
    return sums
