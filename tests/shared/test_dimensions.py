"""Dimensions: declarations checked, the mixed-radix slice numbering, where/group_by, the
``other`` mapping, a report's ``dims`` with its three reasons, and the task that holds them."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ldp_telemetry.shared import DecodeError, ParameterError, TaskConfig
from ldp_telemetry.shared.dimensions import OTHER, Dimensions, default_min_slice_size

PLATFORM = {"name": "platform", "values": ["android", "ios", "web"]}
VERSION = {"name": "app_version", "values": ["5.1", "5.2", "5.3"]}
TWO = Dimensions.parse([PLATFORM, VERSION])


def test_slices_are_numbered_in_mixed_radix_declared_order() -> None:
    assert TWO.slice_count == 16
    assert TWO.slice_of({"platform": "android", "app_version": "5.1"}) == 0
    assert TWO.slice_of({"platform": "android", "app_version": "other"}) == 3
    assert TWO.slice_of({"platform": "ios", "app_version": "5.1"}) == 4
    assert TWO.slice_of({"platform": "web", "app_version": "5.3"}) == 2 * 4 + 2
    assert TWO.slice_of({"platform": "other", "app_version": "other"}) == 15
    three = Dimensions.parse([PLATFORM, VERSION, {"name": "country", "values": ["fr"]}])
    # ((i0 * n1) + i1) * n2 + i2 with n1 = 4, n2 = 2
    assert (
        three.slice_of({"platform": "ios", "app_version": "5.3", "country": "other"})
        == ((1 * 4) + 2) * 2 + 1
    )
    assert three.values_of(13) == {"platform": "ios", "app_version": "5.3", "country": "other"}


def test_values_of_is_the_inverse_of_slice_of_for_every_slice() -> None:
    seen = [TWO.slice_of(TWO.values_of(index)) for index in range(TWO.slice_count)]
    assert seen == list(range(16))
    bad: list[Any] = [-1, 16, True, 1.0]
    for index in bad:
        with pytest.raises(ParameterError):
            TWO.values_of(index)


names = st.from_regex(r"[a-z][a-z0-9_]{0,31}", fullmatch=True)
values = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=64
).filter(lambda v: v != OTHER)
declarations = st.lists(
    st.tuples(names, st.lists(values, min_size=1, max_size=6, unique=True)),
    min_size=1,
    max_size=3,
    unique_by=lambda d: d[0],
).map(lambda ds: [{"name": n, "values": v} for n, v in ds])


@given(declarations, st.data())
def test_round_trips(declared: list[dict[str, Any]], data: st.DataObject) -> None:
    dimensions = Dimensions.parse(declared)
    assert Dimensions.parse(dimensions.to_json()) == dimensions
    assert dimensions.to_json() == declared
    assert dimensions.slice_count == math.prod(len(d["values"]) + 1 for d in declared)
    index = data.draw(st.integers(0, dimensions.slice_count - 1))
    slice_values = dimensions.values_of(index)
    assert dimensions.slice_of(slice_values) == index
    assert dimensions.slice_of_report(slice_values) == index
    assert dimensions.coarsen(slice_values) == slice_values
    assert dimensions.matching(slice_values) == [index]
    assert dimensions.matching() == list(range(dimensions.slice_count))


def test_where_and_group_by_select_slices() -> None:
    assert TWO.matching({"platform": "ios"}) == [4, 5, 6, 7]
    assert TWO.matching({"app_version": "other"}) == [3, 7, 11, 15]
    assert TWO.grouped(["platform"]) == {
        ("android",): [0, 1, 2, 3],
        ("ios",): [4, 5, 6, 7],
        ("web",): [8, 9, 10, 11],
        ("other",): [12, 13, 14, 15],
    }
    assert TWO.grouped(["app_version"], {"platform": "web"}) == {
        ("5.1",): [8],
        ("5.2",): [9],
        ("5.3",): [10],
        ("other",): [11],
    }
    by_both = TWO.grouped(["app_version", "platform"])
    assert list(by_both)[:5] == [
        ("5.1", "android"),
        ("5.1", "ios"),
        ("5.1", "web"),
        ("5.1", "other"),
        ("5.2", "android"),
    ]
    assert by_both[("5.2", "web")] == [9]
    assert TWO.grouped() == {(): list(range(16))}


@pytest.mark.parametrize(
    ("group_by", "where", "message"),
    [
        (["country"], None, "does not declare"),
        ([], {"country": "fr"}, "does not declare"),
        ([], {"platform": "linux"}, "must be one of"),
        ([], {"platform": 3}, "must be one of"),
        (["platform", "platform"], None, "twice"),
    ],
)
def test_queries_naming_what_is_not_declared_are_refused(
    group_by: list[str], where: dict[str, Any] | None, message: str
) -> None:
    with pytest.raises(ParameterError, match=message):
        TWO.grouped(group_by, where)


def test_coarsen_maps_unknown_and_absent_values_to_other_and_drops_undeclared_names() -> None:
    assert TWO.coarsen({"platform": "ios", "app_version": "5.2"}) == {
        "platform": "ios",
        "app_version": "5.2",
    }
    assert TWO.coarsen({"platform": "iOS 17.1 (iPhone15,2)", "country": "fr"}) == {
        "platform": "other",
        "app_version": "other",
    }
    not_strings: dict[str, Any] = {"platform": 5.2, "app_version": None}
    assert TWO.coarsen(not_strings) == {
        "platform": "other",
        "app_version": "other",
    }
    assert TWO.coarsen(None) == {"platform": "other", "app_version": "other"}


@pytest.mark.parametrize(
    ("dims", "reason"),
    [
        (None, "dimensions_missing"),
        ({"platform": "ios"}, "dimensions_missing"),
        ({}, "dimensions_missing"),
        ({"platform": "ios", "app_version": "5.2", "country": "fr"}, "dimension_undeclared"),
        ({"platform": "ios", "country": "fr"}, "dimension_undeclared"),
        ({"platform": "linux", "app_version": "5.2"}, "dimension_value_unknown"),
        ({"platform": "ios", "app_version": 5.2}, "dimension_value_unknown"),
        ({"platform": "ios", "app_version": "OTHER"}, "dimension_value_unknown"),
        ({"platform": "ios", "app_version": None}, "dimension_value_unknown"),
        (["ios", "5.2"], "invalid_message"),
        ("ios", "invalid_message"),
    ],
)
def test_a_reports_dims_are_checked_with_their_reason(dims: Any, reason: str) -> None:
    with pytest.raises(DecodeError) as caught:
        TWO.slice_of_report(dims)
    assert caught.value.reason == reason


@pytest.mark.parametrize(
    ("declared", "message"),
    [
        ([], "1 to 3"),
        ({"platform": ["a"]}, "1 to 3"),
        ([PLATFORM] * 2, "distinct"),
        (
            [PLATFORM, VERSION, {"name": "a", "values": ["x"]}, {"name": "b", "values": ["x"]}],
            "1 to 3",
        ),
        ([{"name": "Platform", "values": ["a"]}], "a dimension name"),
        ([{"name": "_p", "values": ["a"]}], "a dimension name"),
        ([{"name": "p" * 33, "values": ["a"]}], "a dimension name"),
        ([{"name": "p", "values": []}], "1 to 63"),
        ([{"name": "p", "values": [str(i) for i in range(64)]}], "1 to 63"),
        ([{"name": "p", "values": "abc"}], "1 to 63"),
        ([{"name": "p", "values": ["a", "a"]}], "distinct"),
        ([{"name": "p", "values": [""]}], "1 to 64"),
        ([{"name": "p", "values": ["x" * 65]}], "1 to 64"),
        ([{"name": "p", "values": [1]}], "1 to 64"),
        ([{"name": "p", "values": ["a\nb"]}], "control"),
        ([{"name": "p", "values": ["a\x85"]}], "control"),
        ([{"name": "p", "values": ["other"]}], "implicit"),
        ([{"name": "p", "values": ["a"], "extra": 1}], "each dimension"),
    ],
)
def test_declarations_breaking_a_rule_are_refused(declared: Any, message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        Dimensions.parse(declared)


def test_the_largest_declaration_parses_and_the_slice_limit_names_product_and_limit() -> None:
    widest = [{"name": f"d{j}", "values": [str(i) for i in range(63)]} for j in range(3)]
    assert Dimensions.parse(widest).slice_count == 64**3
    TWO.check_slice_count(16)
    with pytest.raises(ParameterError, match=r"4 × 4 = 16 slices.*at most 15 \(MAX_SLICES\)"):
        TWO.check_slice_count(15)


def task(**changes: Any) -> TaskConfig:
    fields: dict[str, Any] = {"task_id": "t", "mechanism": "rr", "epsilon": 1.0}
    return TaskConfig(**{**fields, **changes})


def test_a_task_without_dimensions_is_unchanged_and_speaks_1_0() -> None:
    plain = task()
    assert plain.protocol == "1.0" and plain.to_dict()["protocol"] == "1.0"
    assert "dimensions" not in plain.to_dict() and "min_slice_size" not in plain.to_dict()
    assert plain.slice_count == 1 and plain.dimensions is None and plain.min_slice_size is None


def test_a_task_with_dimensions_fingerprints_them_and_speaks_1_1() -> None:
    sliced = task(dimensions=[PLATFORM, VERSION])
    served = sliced.to_dict()
    assert served["protocol"] == "1.1"
    assert served["dimensions"] == [PLATFORM, VERSION]
    assert served["min_slice_size"] == 100 == default_min_slice_size(100)
    assert sliced.slice_count == 16
    assert TaskConfig.from_dict(served) == sliced
    assert TaskConfig.from_dict(served).fingerprint == sliced.fingerprint
    others = [
        task(),
        task(dimensions=[PLATFORM]),
        task(dimensions=[VERSION, PLATFORM]),
        task(dimensions=[PLATFORM, VERSION], min_slice_size=101),
        task(dimensions=[PLATFORM, {"name": "app_version", "values": ["5.1", "5.2"]}]),
    ]
    assert len({t.fingerprint for t in [sliced, *others]}) == 6
    assert task(dimensions=[PLATFORM], min_batch_size=10).min_slice_size == 50


def test_protocol_must_agree_with_the_dimensions() -> None:
    served = task(dimensions=[PLATFORM]).to_dict()
    with pytest.raises(ParameterError, match="protocol"):
        TaskConfig.from_dict({**served, "protocol": "1.0", "fingerprint": ""})
    plain = task().to_dict()
    with pytest.raises(ParameterError, match="protocol"):
        TaskConfig.from_dict({**plain, "protocol": "1.1"})
    with pytest.raises(ParameterError, match="protocol"):
        TaskConfig.from_dict({**plain, "protocol": "2.0"})


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"min_slice_size": 50}, "declares dimensions"),
        ({"dimensions": [PLATFORM], "min_slice_size": 99}, "below the task's min_batch_size"),
        ({"dimensions": [PLATFORM], "min_slice_size": 10**9 + 1}, "min_slice_size"),
        ({"dimensions": [PLATFORM], "min_slice_size": 100.0}, "integer"),
        ({"dimensions": [PLATFORM], "min_slice_size": True}, "integer"),
        ({"dimensions": "platform"}, "dimensions must be a list"),
    ],
)
def test_min_slice_size_rules(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        task(**changes)


def test_the_codec_carries_the_slice_as_dims_both_ways() -> None:
    from dataclasses import replace

    from ldp_telemetry.shared import Envelope, decode_batch, encode_report
    from ldp_telemetry.shared.codec import new_report_id

    sliced = task(dimensions=[PLATFORM, VERSION], min_batch_size=1)
    envelopes = [
        replace(Envelope(new_report_id(), sliced.fingerprint, 0, True), slice=index)
        for index in range(sliced.slice_count)
    ]
    reports = [encode_report(sliced, envelope) for envelope in envelopes]
    assert sliced.dimensions is not None
    assert [r["dims"] for r in reports] == [sliced.dimensions.values_of(i) for i in range(16)]
    decoded, rejected = decode_batch(sliced, {"reports": reports})
    assert decoded == envelopes and rejected == []
    plain = task(min_batch_size=1)
    assert "dims" not in encode_report(plain, Envelope(new_report_id(), plain.fingerprint, 0, True))
