"""``mechanism: "auto"``: pick the frequency kind with the least expected variance.

Each candidate kind's :class:`~ldp_telemetry.shared.mechanisms.base.Plan` (its closed form, at
``PLANNING_DEVICES`` reports spread evenly over the domain) gives the variance of one
value's count; divided by the reports it is the variance per report, which for the
fixed-domain kinds does not depend on how many report. A kind is eligible when its report
fits ``max_report_bytes`` (its payload bits, rounded up to bytes) and, for a task without
a domain (``expected_distinct`` instead), when it needs no domain. Ties (within 10⁻⁶)
go to the smaller report, then to the order of ``AUTO_KINDS`` (so ss, which is grr when
ω = 1, yields to grr). The created task records the comparison as ``selection``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ldp_telemetry.shared.errors import ParameterError
from ldp_telemetry.shared.mechanisms.base import Plan
from ldp_telemetry.shared.mechanisms.registry import KINDS
from ldp_telemetry.shared.validation import check_epsilon, check_int

AUTO = "auto"
AUTO_KINDS = ("grr", "ss", "oue", "olh", "cms", "hcms")
AUTO_FIELDS = ("expected_distinct", "max_report_bytes")
DEFAULT_MAX_REPORT_BYTES = 512
PLANNING_DEVICES = 10**6
MAX_DISTINCT = 10**12


@dataclass(frozen=True)
class Candidate:
    """One kind as auto compares it; ``excluded`` says why it may not be chosen (or None)."""

    mechanism: str
    plan: Plan
    excluded: str | None

    @property
    def variance_per_report(self) -> float:
        """Return Var(count estimate)/n at the planning population."""
        return self.plan.std_error**2 / PLANNING_DEVICES

    @property
    def report_bytes(self) -> int:
        """Return the payload's size, rounded up to bytes."""
        return math.ceil(self.plan.report_bits / 8)

    def to_json(self) -> dict[str, Any]:
        """Return the row the task's ``selection`` records."""
        row: dict[str, Any] = {
            "mechanism": self.mechanism,
            "variance_per_report": self.variance_per_report,
            "report_bytes": self.report_bytes,
        }
        if self.excluded is not None:
            row["excluded"] = self.excluded
        return row


def compare(
    epsilon: float,
    domain_size: int,
    *,
    has_domain: bool = True,
    max_report_bytes: int = DEFAULT_MAX_REPORT_BYTES,
) -> list[Candidate]:
    """Return the kinds auto compares, least variance first (the eligible ones first)."""
    candidates = []
    for name in AUTO_KINDS:
        plan = KINDS[name].plan(epsilon, domain_size, PLANNING_DEVICES)
        if plan is None:
            continue
        excluded = None
        if not has_domain and "domain" in KINDS[name].fields():
            excluded = "needs the domain"
        elif math.ceil(plan.report_bits / 8) > max_report_bytes:
            excluded = f"report over {max_report_bytes} bytes"
        candidates.append(Candidate(name, plan, excluded))
    return sorted(
        candidates,
        key=lambda c: (
            c.excluded is not None,
            float(f"{c.variance_per_report:.6g}"),
            c.plan.report_bits,
            AUTO_KINDS.index(c.mechanism),
        ),
    )


def resolve(fields: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return a new task's fields with auto replaced by the chosen kind, and the record.

    ``fields`` holds ``epsilon`` and either ``domain`` (a list of strings) or
    ``expected_distinct`` (a string task), and optionally ``max_report_bytes``.
    """
    given = dict(fields)
    epsilon = check_epsilon(given.get("epsilon"))
    cap = given.pop("max_report_bytes", None)
    cap = (
        DEFAULT_MAX_REPORT_BYTES if cap is None else check_int("max_report_bytes", cap, 1, 1 << 20)
    )
    distinct = given.pop("expected_distinct", None)
    domain = given.get("domain")
    if (domain is None) == (distinct is None):
        raise ParameterError("auto needs either domain (a list of values) or expected_distinct")
    if domain is not None:
        if not isinstance(domain, list | tuple):
            raise ParameterError("domain must be a list of distinct strings")
        size = len(domain)
    else:
        size = check_int("expected_distinct", distinct, 2, MAX_DISTINCT)
    table = compare(epsilon, size, has_domain=domain is not None, max_report_bytes=cap)
    if not table or table[0].excluded is not None:
        raise ParameterError(
            f"no mechanism fits a report of {cap} bytes for this domain; raise max_report_bytes"
        )
    chosen = table[0]
    concrete = {k: v for k, v in given.items() if k != "domain" or "domain" in chosen.plan.fields}
    concrete.update({k: v for k, v in chosen.plan.fields.items() if k != "domain"})
    concrete["mechanism"] = chosen.mechanism
    record = {
        "by": AUTO,
        "mechanism": chosen.mechanism,
        "domain_size": size,
        "max_report_bytes": cap,
        "planning_devices": PLANNING_DEVICES,
        "compared": [c.to_json() for c in table],
    }
    return concrete, record
