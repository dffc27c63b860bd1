"""POST /v1/tasks/{id}/compare: a planted difference between two platforms is significant
after Holm's correction and an equal value is not (seeded); two periods; numeric means and
percentiles; the sides it refuses.

The reports a test draws are encoded once and posted to each backend's task (the tasks are
the same on both, so are their fingerprints): ``drawn``, module-scoped."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
from flask.testing import FlaskClient

from tests.aggregator.breakdowns.uploads import (
    PLATFORM,
    ask,
    bodies,
    create,
    envelopes,
    post,
    upload,
)

DOMAIN = ["a", "b", "c", "d"]
ANDROID, IOS = (0.40, 0.20, 0.20, 0.20), (0.30, 0.30, 0.20, 0.20)  # a, b planted; c, d equal
DEVICES = 20_000
PER_PLATFORM = 5_000  # numeric reports per platform
Drawn = dict[Any, tuple[Any, list[bytes]]]


@pytest.fixture(scope="module")
def drawn() -> Drawn:
    """Return the module's cache: (truth, upload bodies) per upload, drawn on the first
    backend, posted again on the second."""
    return {}


def upload_platforms(client: FlaskClient, devices: int, cache: Drawn) -> dict[str, list[int]]:
    """Create the grr task "cmp"; upload ``devices`` reports each from android and ios
    (none from web); return each platform's true count of every value."""
    task = create(
        client, task_id="cmp", mechanism="grr", epsilon=2.0, domain=DOMAIN, dimensions=[PLATFORM]
    )
    if ("cmp", devices) not in cache:
        rng, truth, sent = np.random.default_rng(38), {}, []
        for platform, shares in (("android", ANDROID), ("ios", IOS)):
            values = list(rng.choice(DOMAIN, devices, p=shares))
            truth[platform] = [values.count(v) for v in DOMAIN]
            sent += envelopes(task, values, rng, {"platform": platform})
        cache["cmp", devices] = truth, bodies(task, sent)
    truth, batches = cache["cmp", devices]
    post(client, task.task_id, batches)
    return dict(truth)


@pytest.fixture
def platforms(client: FlaskClient, drawn: Drawn) -> dict[str, list[int]]:
    return upload_platforms(client, DEVICES, drawn)


def test_a_planted_difference_is_significant_after_holm_an_equal_value_is_not(
    client: FlaskClient, platforms: dict[str, list[int]]
) -> None:
    answer = ask(
        client, "cmp", "compare", a={"where": {"platform": "android"}},
        b={"where": {"platform": "ios"}},
    )  # fmt: skip
    assert answer.status_code == 200, answer.get_json()
    body = answer.get_json()
    assert body["quantity"] == "share" and body["alpha"] == pytest.approx(0.05)
    assert body["covariance"].startswith("the two estimates are independent")
    assert (body["a"]["n"], body["b"]["n"]) == (DEVICES, DEVICES)
    assert body["a"]["where"] == {"platform": "android"}
    rows = {row["value"]: row for row in body["differences"]}
    assert [v for v in DOMAIN if rows[v]["significant"]] == ["a", "b"]
    for value, android, ios in zip(DOMAIN, platforms["android"], platforms["ios"], strict=True):
        row, true = rows[value], (android - ios) / DEVICES
        assert row["ci_low"] <= true <= row["ci_high"], (value, row, true)
        assert row["difference"] == pytest.approx(row["a"] - row["b"])
        assert row["std_error"] > 0 and row["adjusted_p"] >= row["p_value"]
    # The estimates are the estimates answer's, divided by each side's n.
    alone = ask(client, "cmp", where={"platform": "android"}).get_json()["slices"][0]
    assert [r["estimate"] / DEVICES for r in alone["estimates"]] == pytest.approx(
        [rows[v]["a"] for v in DOMAIN], rel=1e-12
    )


def test_sides_that_share_reports_or_are_thin_are_refused(
    client: FlaskClient, drawn: Drawn
) -> None:
    upload_platforms(client, 500, drawn)  # two slices over min_slice_size (100), web empty
    same = ask(client, "cmp", "compare", a={}, b={"where": {"platform": "ios"}})
    assert same.status_code == 400 and "share reports" in same.get_json()["detail"]
    thin = ask(
        client, "cmp", "compare", a={"where": {"platform": "web"}}, b={"where": {"platform": "ios"}}
    )
    assert thin.status_code == 422, thin.get_json()
    assert "min_slice_size (100)" in thin.get_json()["detail"]  # max(50, min_batch_size)
    bodies: list[dict[str, Any]] = [
        {"a": {}},
        {"a": {"where": {"os": "x"}}, "b": {}},
        {"a": [], "b": {}},
    ]
    for body in bodies:
        refused = ask(client, "cmp", "compare", **body)
        assert refused.status_code == 400, body


def test_two_periods_of_a_longitudinal_task_say_their_bound(client: FlaskClient) -> None:
    task = create(
        client, task_id="weeks", mechanism="rr", time_precision=3_600,
        longitudinal={"epsilon_inf": 3.0, "flip": 0.1},
    )  # fmt: skip
    now = task.floor_time(time.time())
    rng, sent = np.random.default_rng(5), []
    for bucket, share in ((now - 3_600, 0.3), (now, 0.5)):
        sent += envelopes(task, list(rng.random(3_000) < share), rng, bucket=bucket)
    upload(client, task, sent)
    answer = ask(
        client, "weeks", "compare", a={"start": now - 3_600, "end": now}, b={"start": now}
    ).get_json()
    assert "upper bound" in answer["covariance"]
    rows = {row["value"]: row for row in answer["differences"]}
    assert rows[True]["significant"] and rows[True]["ci_low"] < -0.2 < rows[True]["ci_high"]
    overlapping = ask(client, "weeks", "compare", a={"start": now - 3_600}, b={"start": now})
    assert overlapping.status_code == 400


def latencies(
    client: FlaskClient, task_id: str, spread: str, cache: Drawn
) -> dict[str, np.ndarray]:
    """Create a numeric task; upload PER_PLATFORM latencies per platform, ios's 20 ms slower."""
    task = create(
        client, task_id=task_id, mechanism="numeric", epsilon=2.0, lo=0, hi=200,
        buckets=32, dimensions=[PLATFORM],
    )  # fmt: skip
    if task_id not in cache:
        rng, sent, drawn = np.random.default_rng(11), [], {}
        for platform, centre in (("android", 80.0), ("ios", 100.0)):
            if spread == "wide":
                drawn[platform] = rng.uniform(centre - 80, centre + 80, PER_PLATFORM)
            else:  # concentrated: tighter than the reconstruction resolves
                drawn[platform] = np.clip(rng.normal(centre, 20.0, PER_PLATFORM), 0, 200)
            sent += envelopes(task, list(drawn[platform]), rng, {"platform": platform})
        cache[task_id] = drawn, bodies(task, sent)
    drawn, batches = cache[task_id]
    post(client, task.task_id, batches)
    return dict(drawn)


def compare_platforms(client: FlaskClient, task_id: str) -> dict[str, dict[str, Any]]:
    body = ask(
        client, task_id, "compare", candidates=["mean", "p50", "p90"],
        a={"where": {"platform": "android"}}, b={"where": {"platform": "ios"}},
    ).get_json()  # fmt: skip
    assert body["quantity"] == "value"
    return {row["value"]: row for row in body["differences"]}


def test_numeric_tasks_compare_means_and_percentiles(client: FlaskClient, drawn: Drawn) -> None:
    values = latencies(client, "latency", "wide", drawn)
    rows = compare_platforms(client, "latency")
    assert list(rows) == ["mean", "p50", "p90"]
    android, ios = values["android"], values["ios"]
    truth = {
        "mean": android.mean() - ios.mean(),
        "p50": np.percentile(android, 50) - np.percentile(ios, 50),
        "p90": np.percentile(android, 90) - np.percentile(ios, 90),
    }
    for name, row in rows.items():
        assert row["ci_low"] <= truth[name] <= row["ci_high"], (name, row, truth[name])
        assert row["significant"] and "reason" not in row


def test_a_numeric_interval_that_cannot_be_trusted_is_shown_not_tested(
    client: FlaskClient, drawn: Drawn
) -> None:
    latencies(client, "tight", "concentrated", drawn)
    rows = compare_platforms(client, "tight")
    assert rows["mean"]["significant"] and rows["mean"]["adjusted_p"] is not None
    doubted = [name for name, row in rows.items() if "reason" in row]
    assert doubted  # percentiles of values this concentrated: their intervals are doubted
    for name in doubted:
        assert rows[name]["adjusted_p"] is None and rows[name]["significant"] is False
        assert str(rows[name]["reason"]).startswith("not tested: ")
