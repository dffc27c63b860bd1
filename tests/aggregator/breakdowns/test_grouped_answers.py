"""Through HTTP, on both stores: estimates and heavy hitters by group_by and where, thin
groups rolled up (never shown alone), every report in exactly one row, the totals as
without a breakdown; and the 400 problems of a breakdown the task cannot answer."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from flask.testing import FlaskClient

from ldp_telemetry.shared import TaskConfig
from tests.aggregator.breakdowns.uploads import (
    PLATFORM,
    VERSION,
    ask,
    create,
    envelopes,
    upload,
)

DOMAIN = ["a", "b", "c"]
# Devices per (platform, app_version) and each slice's value shares: android mostly a,
# ios mostly b; web (30 devices) and other (25) are thin on their own.
POPULATION: dict[tuple[str, str], tuple[int, tuple[float, float, float]]] = {
    ("android", "5.1"): (1_500, (0.7, 0.2, 0.1)),
    ("android", "5.2"): (1_500, (0.6, 0.3, 0.1)),
    ("ios", "5.1"): (2_000, (0.1, 0.8, 0.1)),
    ("ios", "5.2"): (40, (0.1, 0.8, 0.1)),
    ("web", "5.1"): (30, (0.3, 0.3, 0.4)),
    ("other", "other"): (25, (0.3, 0.3, 0.4)),
}


def populate(client: FlaskClient, task: TaskConfig, seed: int) -> dict[tuple[str, str], list[str]]:
    """Upload every slice's devices (one report each); return each slice's true values."""
    rng, truth, sent = np.random.default_rng(seed), {}, []
    for (platform, version), (devices, shares) in POPULATION.items():
        values = list(rng.choice(DOMAIN, devices, p=shares))
        truth[(platform, version)] = values
        sent += envelopes(task, values, rng, {"platform": platform, "app_version": version})
    upload(client, task, sent)
    return truth


@pytest.fixture
def grr(client: FlaskClient) -> tuple[TaskConfig, dict[tuple[str, str], list[str]]]:
    task = create(
        client, task_id="by", mechanism="grr", epsilon=2.0, domain=DOMAIN,
        dimensions=[PLATFORM, VERSION], min_batch_size=20,
    )  # fmt: skip
    return task, populate(client, task, seed=38)


def counts(values: list[str]) -> list[int]:
    return [values.count(value) for value in DOMAIN]


def test_grouped_by_platform_each_row_near_its_truth_thin_ones_rolled_up(
    client: FlaskClient, grr: tuple[TaskConfig, dict[tuple[str, str], list[str]]]
) -> None:
    _, truth = grr
    plain = ask(client, "by").get_json()
    body = ask(client, "by", group_by=["platform"]).get_json()
    assert {k: v for k, v in body.items() if k not in ("breakdown", "slices")} == plain
    assert body["breakdown"] == {
        "group_by": ["platform"], "where": {}, "min_slice_size": 50, "selected": 5_095,
    }  # fmt: skip
    rows = {tuple(row["dimensions"].values()): row for row in body["slices"]}
    assert list(rows) == [("android",), ("ios",), ()]
    # web (30) and other (25) are thin: pooled, never shown alone; every report in one row.
    assert [r["dimensions"] for r in rows[()]["rolled_up"]] == [
        {"platform": "web"},
        {"platform": "other"},
    ]
    assert "pooled with the other thin groups" in rows[()]["rolled_up"][0]["reason"]
    assert sum(row["n"] for row in body["slices"]) == body["n"] == 5_095
    members = {
        ("android",): [("android", "5.1"), ("android", "5.2")],
        ("ios",): [("ios", "5.1"), ("ios", "5.2")],
        (): [("web", "5.1"), ("other", "other")],
    }
    for key, row in rows.items():
        true = np.sum([counts(truth[member]) for member in members[key]], axis=0)
        assert row["n"] == int(true.sum())
        for estimate, count in zip(row["estimates"], true, strict=True):
            assert abs(estimate["estimate"] - count) < 4 * estimate["std_error"], (key, estimate)
        assert row["central_epsilon"] is None and "central_epsilon_reason" in row
    assert rows[("android",)]["rolled_up"] == [] and rows[("ios",)]["rolled_up"] == []


def test_group_by_two_dimensions_rolls_up_the_last_first(
    client: FlaskClient, grr: tuple[TaskConfig, dict[tuple[str, str], list[str]]]
) -> None:
    body = ask(client, "by", group_by=["platform", "app_version"]).get_json()
    shown = [(row["dimensions"], [r["dimensions"] for r in row["rolled_up"]], row["n"])
             for row in body["slices"]]  # fmt: skip
    # ios 5.2 (40) alone is thin, and alone under ios: it goes up, with web 5.1 and other.
    assert shown == [
        ({"platform": "android", "app_version": "5.1"}, [], 1_500),
        ({"platform": "android", "app_version": "5.2"}, [], 1_500),
        ({"platform": "ios", "app_version": "5.1"}, [], 2_000),
        (
            {},
            [
                {"platform": "ios", "app_version": "5.2"},
                {"platform": "web", "app_version": "5.1"},
                {"platform": "other", "app_version": "other"},
            ],
            95,
        ),
    ]


def test_where_limits_the_rows_not_the_totals(
    client: FlaskClient, grr: tuple[TaskConfig, dict[tuple[str, str], list[str]]]
) -> None:
    body = ask(client, "by", group_by=["app_version"], where={"platform": "ios"}).get_json()
    assert body["n"] == 5_095 and body["breakdown"]["selected"] == 2_040
    # ios 5.2 (40) is thin and nothing else under ios is: into the largest row.
    (row,) = body["slices"]
    assert row["dimensions"] == {"app_version": "5.1"} and row["n"] == 2_040
    assert [r["dimensions"] for r in row["rolled_up"]] == [{"app_version": "5.2"}]
    assert "merged into the largest row" in row["rolled_up"][0]["reason"]
    thin = ask(client, "by", where={"platform": "web"}).get_json()
    assert thin["slices"] == [] and thin["breakdown"]["selected"] == 30
    assert "fewer than the task's min_slice_size (50)" in thin["breakdown"]["reason"]


@pytest.mark.parametrize(
    ("query", "detail"),
    [
        ({"group_by": ["country"]}, "which the task does not declare"),
        ({"where": {"platform": "linux"}}, "must be one of ['android', 'ios', 'web'] or 'other'"),
        ({"group_by": ["platform"], "where": {"platform": "ios"}}, "cannot also be grouped by"),
        ({"group_by": "platform"}, "group_by must be a list of dimension names"),
        ({"where": {"platform": 1}}, "where must be an object"),
        ({"group_by": ["platform", "platform"]}, "twice"),
    ],
)
def test_a_breakdown_the_task_cannot_answer_is_a_400(
    client: FlaskClient, query: dict[str, Any], detail: str
) -> None:
    create(client, task_id="by", mechanism="rr", epsilon=1.0, dimensions=[PLATFORM, VERSION])
    for what in ("estimates", "heavy-hitters"):
        answer = ask(client, "by", what, **query)
        assert answer.status_code == 400, answer.get_json()
        assert answer.get_json()["type"].endswith(":invalid_query")
        assert detail in answer.get_json()["detail"]


def test_a_task_without_dimensions_has_no_breakdown(client: FlaskClient) -> None:
    create(client, task_id="plain", mechanism="rr", epsilon=1.0)
    answer = ask(client, "plain", group_by=["platform"])
    assert answer.status_code == 400
    assert "declares no dimensions" in answer.get_json()["detail"]
