"""auto's choice against the closed forms, and attackability against Monte Carlo.

The variances here are docs/design.md's rare-value forms, written out independently of the
mechanisms; the attack rates are simulated with each kind's Bayes guess (uniform prior:
guess uniformly among the values the report favours most).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldp_telemetry.shared import ParameterError, TaskConfig
from ldp_telemetry.shared.mechanisms.auto import compare, resolve
from ldp_telemetry.shared.mechanisms.registry import KINDS, plan
from ldp_telemetry.shared.risk import lift, posterior_bound

DIGITS = [str(i) for i in range(16)]


def closed_form_variances(epsilon: float, d: int) -> dict[str, float]:
    """Return n·Var of a rare value's count for grr, oue and ss (docs/design.md)."""
    e = math.exp(epsilon)
    omega = max(1, math.floor(d / (e + 1) + 0.5))
    p = omega * e / (omega * e + d - omega)
    q = (omega * e * (omega - 1) + (d - omega) * omega) / ((d - 1) * (omega * e + d - omega))
    return {
        "grr": (e + d - 2) / (e - 1) ** 2,
        "oue": 4 * e / (e - 1) ** 2,
        "ss": q * (1 - q) / (p - q) ** 2,
    }


@pytest.mark.parametrize(("d", "epsilon"), [(4, 1.0), (64, 2.0), (2048, 4.0)])
def test_auto_chooses_the_least_variance(d: int, epsilon: float) -> None:
    forms = closed_form_variances(epsilon, d)
    best = min(forms.values())
    task = TaskConfig.create(
        task_id="t", mechanism="auto", epsilon=epsilon, domain=[str(i) for i in range(d)]
    )
    assert forms[task.mechanism] == pytest.approx(best, rel=1e-9)
    assert task.selection is not None and task.selection["mechanism"] == task.mechanism
    compared = task.selection["compared"]
    assert {row["mechanism"] for row in compared} == {"grr", "ss", "oue", "olh", "cms", "hcms"}
    assert compared[0]["variance_per_report"] == min(r["variance_per_report"] for r in compared)
    # The planner's variances per report are the closed forms (an even spread, not rare).
    for row in compared:
        if row["mechanism"] in forms:
            assert row["variance_per_report"] == pytest.approx(forms[row["mechanism"]], rel=0.2)


def test_auto_breaks_a_tie_towards_grr() -> None:
    # d = 4, ε = 1: ω = 1, and ss with one index is grr.
    assert (
        TaskConfig.create(task_id="t", mechanism="auto", epsilon=1.0, domain=DIGITS[:4]).mechanism
        == "grr"
    )


def test_auto_respects_the_report_cap_and_string_tasks() -> None:
    domain = [str(i) for i in range(2048)]
    small, record = resolve(
        {
            "task_id": "t",
            "mechanism": "auto",
            "epsilon": 4.0,
            "domain": domain,
            "max_report_bytes": 32,
        }
    )
    assert small["mechanism"] == "olh" and "domain" not in small
    assert {r["mechanism"]: r.get("excluded") for r in record["compared"]}["ss"] == (
        "report over 32 bytes"
    )
    strings = TaskConfig.create(task_id="t", mechanism="auto", epsilon=4.0, expected_distinct=300)
    assert strings.mechanism == "olh" and strings.hash_seed is not None
    excluded = {r["mechanism"]: r.get("excluded") for r in strings.selection["compared"]}
    assert excluded["ss"] == excluded["oue"] == excluded["grr"] == "needs the domain"
    with pytest.raises(ParameterError, match="either domain"):
        TaskConfig.create(task_id="t", mechanism="auto", epsilon=1.0)
    with pytest.raises(ParameterError, match="max_report_bytes"):
        TaskConfig.create(
            task_id="t", mechanism="auto", epsilon=1.0, domain=DIGITS, max_report_bytes=0
        )


def test_the_selection_survives_the_store_round_trip() -> None:
    task = TaskConfig.create(task_id="t", mechanism="auto", epsilon=2.0, domain=DIGITS)
    again = TaskConfig.from_dict(task.to_dict())
    assert again.selection == task.selection and again.fingerprint == task.fingerprint
    plain = TaskConfig.create(task_id="t", mechanism=task.mechanism, epsilon=2.0, domain=DIGITS)
    assert plain.fingerprint == task.fingerprint  # the record is not fingerprinted


def test_attack_success_is_design_s_reference() -> None:
    # docs/design.md (Attackability) at d = 128, ε = 4 (three decimals; olh's g is an integer here).
    rates = {name: p.attack_success for name, p in plan(4.0, 128, 10**5)}
    expected = {"grr": 0.301, "ss": 0.232, "oue": 0.196, "olh": 0.197, "cms": 0.058, "hcms": 0.015}
    for name, rate in expected.items():
        assert rates[name] == pytest.approx(rate, abs=1.5e-3), name
    assert rates["grr"] == pytest.approx(math.exp(4) / (math.exp(4) + 127), rel=1e-8)
    assert lift(rates["grr"], 128) == pytest.approx(38.5, abs=0.05)
    assert posterior_bound(0.01, 4.0) == pytest.approx(0.355, abs=5e-4)
    assert posterior_bound(0.01, 8.0) == pytest.approx(0.968, abs=5e-4)


def guesses_right(
    kind: str, mechanism: object, truth: np.ndarray, rng: np.random.Generator, d: int
) -> np.ndarray:
    """Return whether the Bayes adversary's guess from each report names the truth."""
    values = [DIGITS[i] for i in truth]
    batch = mechanism.privatize_many(values, rng)
    if kind == "grr":
        return batch == truth
    if kind == "oue":
        favoured = np.unpackbits(batch, axis=1, count=d).astype(bool)
    elif kind == "ss":
        favoured = np.zeros((len(truth), d), dtype=bool)
        np.put_along_axis(favoured, batch, True, axis=1)
    else:
        keys = mechanism.keys(DIGITS[:d])
        buckets = mechanism.hashes.bucket_matrix(keys, slice(0, mechanism.k)).T  # (k, d)
        at = buckets[batch.rows]  # each report's row: every value's bucket
        if kind == "olh":
            favoured = at == batch.index[:, None]
        elif kind == "cms":
            bits = np.unpackbits(batch.bits, axis=1)
            favoured = np.take_along_axis(bits, at, axis=1).astype(bool)
        else:  # hcms: the values whose Hadamard sign the report shows
            parity = np.vectorize(lambda x: bin(x).count("1") % 2)(at & batch.cols[:, None])
            favoured = (parity == 0) == batch.bits[:, None].astype(bool)
    favoured[~favoured.any(axis=1)] = True  # nothing favoured: any value is as likely
    hit = favoured[np.arange(len(truth)), truth]
    return hit & (rng.random(len(truth)) < 1.0 / favoured.sum(axis=1))


@pytest.mark.parametrize("kind", ["grr", "ss", "oue", "olh", "cms", "hcms"])
def test_attack_success_matches_monte_carlo(kind: str) -> None:
    d, epsilon, draws = 16, 2.0, 40_000
    params = dict(plan(epsilon, d, 10**5))[kind].fields
    fields = {**params, "domain": DIGITS[:d]} if "domain" in params else {**params, "hash_seed": 9}
    mechanism = KINDS[kind].from_fields(fields).build()
    rng = np.random.default_rng(16)
    truth = rng.integers(0, d, size=draws)
    rate = guesses_right(kind, mechanism, truth, rng, d).mean()
    expected = dict(plan(epsilon, d, 10**5))[kind].attack_success
    assert rate == pytest.approx(expected, rel=0.03), (rate, expected)


def test_the_posterior_bound_is_attained_by_grr() -> None:
    # Prior π on "0" and 1 − π on "1": after the report "0" the posterior is the bound.
    prior, draws = 0.1, 200_000
    task = TaskConfig(task_id="t", mechanism="grr", epsilon=2.0, domain=DIGITS[:3])
    rng = np.random.default_rng(7)
    truth = np.where(rng.random(draws) < prior, 0, 1)
    reports = task.mechanism_object.privatize_many([DIGITS[i] for i in truth], rng)
    posterior = (truth[reports == 0] == 0).mean()
    assert posterior == pytest.approx(posterior_bound(prior, task.effective_epsilon), rel=0.03)


def test_published_attack_success_is_the_plan_s() -> None:
    for kind in ("oue", "ss"):
        task = TaskConfig(task_id="t", mechanism=kind, epsilon=3.0, domain=DIGITS)
        rate = task.to_dict()["attack_success"]
        assert rate == dict(plan(3.0, len(DIGITS), 1000))[kind].attack_success
    assert compare(3.0, 16)[0].plan.attack_success is not None
