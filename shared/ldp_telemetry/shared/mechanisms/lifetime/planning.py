"""A device's lifetime ε per longitudinal variant, for a value that changes c times.

Over a device's life its value takes c + 1 values (c changes; at most d distinct). What each
variant's reports reveal about them, in the worst case, counting what each variant charges:

- ``plain``: every report spends ε₁ afresh, so the bound grows with the reports, not the
  changes: ε₁ per report (``per_report``), no lifetime bound;
- ``rappor``: a permanent response per distinct value, min(c + 1, d)·ε∞;
- ``bilolha``: a permanent response per hashed bucket, at most min(c + 1, 2)·ε∞;
- ``ololoha``: the same with the optimal g for ε₁, min(c + 1, g)·ε∞.

The SDK's device-wide cap (``max_epsilon_inf``, default 64) stops new permanent responses
beyond it: ``silenced_after`` says after how many distinct values (None: never).
"""

from __future__ import annotations

import math
from typing import Any

from ldp_telemetry.shared.mechanisms.lifetime.spec import optimal_buckets

DEFAULT_CAP = 64.0


def lifetime_epsilons(
    epsilon_inf: float, epsilon_1: float, domain_size: int, changes: int, cap: float = DEFAULT_CAP
) -> list[dict[str, Any]]:
    """Return one row per variant: its permanent responses and lifetime ε after ``changes``."""
    distinct = min(changes + 1, domain_size)
    rows: list[dict[str, Any]] = [
        {
            "variant": "plain",
            "g": None,
            "permanent_responses": 0,
            "lifetime_epsilon": None,
            "per_report": epsilon_1,
            "silenced_after": None,
        }
    ]
    layers = (
        ("rappor", None, domain_size),
        ("bilolha", 2, 2),
        ("ololoha", optimal_buckets(epsilon_inf, epsilon_1), None),
    )
    for name, g, most in layers:
        limit = most if most is not None else g
        assert limit is not None
        drawn = min(distinct, limit)
        fits = math.floor((cap + 1e-9) / epsilon_inf)  # permanent responses the cap allows
        rows.append(
            {
                "variant": name,
                "g": g,
                "permanent_responses": min(drawn, fits),
                "lifetime_epsilon": min(drawn, fits) * epsilon_inf,
                "per_report": epsilon_1,
                "silenced_after": fits if drawn > fits else None,
            }
        )
    return rows
