"""Mechanism planning: each kind's expected error from its closed form, best first."""

from __future__ import annotations

import math

import pytest

from ldp_telemetry.shared.accuracy import cms_count_variance, hcms_count_variance
from ldp_telemetry.shared.mechanisms.registry import plan
from ldp_telemetry.shared.mechanisms.sketches.cms import CountMeanSketch
from ldp_telemetry.shared.mechanisms.sketches.hcms import HadamardCountMeanSketch


def test_plans_are_sorted_and_fit_the_domain() -> None:
    plans = plan(1.0, 2, 1000)
    assert plans[0][0] == "rr"  # a yes/no question
    errors = [p.std_error for _, p in plans]
    assert errors == sorted(errors)
    assert "grr" not in dict(plans) and "rr" not in dict(plan(1.0, 100, 1000))
    assert "grr" not in dict(plan(1.0, 100_000, 10**6))  # past grr's domain limit


@pytest.mark.parametrize("devices", [10**5, 10**6])
def test_sketch_plans_are_the_closed_forms(devices: int) -> None:
    # A huge domain: every value rare, collisions negligible (docs/design.md's reference
    # standard deviations).
    plans = dict(plan(4.0, 10**9, devices))
    cms = CountMeanSketch(epsilon=4.0, k=2048, m=1024, hash_seed=0)
    hcms = HadamardCountMeanSketch(epsilon=4.0, k=2048, m=1024, hash_seed=0)
    assert plans["cms"].std_error == pytest.approx(
        math.sqrt(cms_count_variance(devices, 0, cms.m, cms.flip)), rel=1e-3
    )
    assert plans["hcms"].std_error == pytest.approx(
        math.sqrt(hcms_count_variance(devices, 0, hcms.m, hcms.flip)), rel=1e-3
    )
    assert plans["cms"].report_bits == 1024 + 11 and plans["hcms"].report_bits == 1 + 10 + 11
    assert "hash_seed" not in plans["cms"].fields  # the server draws it


def test_collisions_count_for_small_domains() -> None:
    # 100,000 reports over 50 values: 2,000 per value, collisions dominate a small g.
    olh = dict(plan(1.0, 50, 100_000))["olh"]
    alone = dict(plan(1.0, 10**9, 100_000))["olh"]
    assert olh.std_error > alone.std_error
