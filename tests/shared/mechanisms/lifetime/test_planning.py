"""The planner's lifetime ε per variant for a value that changes c times."""

from __future__ import annotations

import pytest

from ldp_telemetry.shared.mechanisms.lifetime.planning import lifetime_epsilons


def by_variant(changes: int, cap: float = 64.0) -> dict[str, dict]:
    return {r["variant"]: r for r in lifetime_epsilons(2.0, 1.0, 100, changes, cap)}


@pytest.mark.parametrize("changes", [0, 1, 3, 31, 99, 500])
def test_each_variant_charges_what_it_draws(changes: int) -> None:
    rows = by_variant(changes, cap=1_000.0)
    distinct = min(changes + 1, 100)
    assert rows["rappor"]["lifetime_epsilon"] == distinct * 2.0
    assert rows["bilolha"]["lifetime_epsilon"] == min(distinct, 2) * 2.0
    assert rows["ololoha"]["g"] == 4  # ε₁ = 1: the integer nearest e + 1
    assert rows["ololoha"]["lifetime_epsilon"] == min(distinct, 4) * 2.0
    assert rows["plain"]["lifetime_epsilon"] is None and rows["plain"]["per_report"] == 1.0
    assert all(r["silenced_after"] is None for r in rows.values())


def test_the_default_cap_silences_rappor_and_never_loloha() -> None:
    rows = by_variant(99)
    assert rows["rappor"]["lifetime_epsilon"] == 64.0 and rows["rappor"]["silenced_after"] == 32
    assert rows["bilolha"]["silenced_after"] is None is rows["ololoha"]["silenced_after"]
