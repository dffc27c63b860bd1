"""Optional mechanism features: what ldp_telemetry.shared.mechanisms.features answers for every
kind.

The collector, the client and the task ask these functions instead of testing a
mechanism's type; this pins their answers over every registered kind (and the
longitudinal variants), so a kind that gains or loses a feature is a visible change.
"""

from __future__ import annotations

import pytest

from ldp_telemetry.shared.mechanisms.features import (
    discoverer,
    longitudinal,
    published,
    stated_variation_ratio,
)
from ldp_telemetry.shared.mechanisms.registry import MECHANISMS
from ldp_telemetry.shared.shuffling.amplification import VariationRatio
from tests.shared.cases import Case, conformance_cases

CASES = conformance_cases()
DISCOVERING = {"hh"}
STATING_RATIO = {"rr", "grr", "cms", "hcms", "olh"}


def test_every_registered_kind_is_asked() -> None:
    assert {case.name for case in CASES} >= set(MECHANISMS)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_features_answer_for_each_kind(case: Case) -> None:
    mechanism = case.build()
    layer = longitudinal(mechanism)
    assert (layer is not None) == case.name.endswith(("-longitudinal", "-loloha"))
    assert layer is None or layer is mechanism
    assert (discoverer(mechanism) is not None) == (case.name in DISCOVERING)
    ratio = stated_variation_ratio(mechanism)
    assert (ratio is not None) == (case.name in STATING_RATIO)
    assert ratio is None or isinstance(ratio, VariationRatio)
    assert all(isinstance(key, str) for key in published(mechanism))


def test_a_discoverer_finds_on_empty_sums() -> None:
    (case,) = [case for case in CASES if case.name in DISCOVERING]
    mechanism = case.build()
    finder = discoverer(mechanism)
    assert finder is not None
    found = finder.discover(mechanism.new_sums(), top=2, survivors=4)
    assert found.estimates.n == 0


def test_a_longitudinal_layer_states_its_permanent_epsilon() -> None:
    case = next(case for case in CASES if case.name.endswith("-longitudinal"))
    mechanism = case.build()
    layer = longitudinal(mechanism)
    assert layer is not None
    assert float(layer.effective_epsilon_inf) > 0 and len(layer.configuration) == 32


def test_features_ask_nothing_of_other_objects() -> None:
    plain = object()
    assert stated_variation_ratio(plain) is None
