"""Through HTTP: fake cms reports refused as implausible, sums flagged, the published bound.

The honest population's reports are privatized once (``honest``, module-scoped: every cms
task here has the same sketch) and sent to each test's task on both backends; each test
draws its own fake reports.
"""

from __future__ import annotations

import numpy as np
import pytest

from ldp_telemetry.shared import TaskConfig
from ldp_telemetry.shared.mechanisms.poisoning import SUSPECT_Z
from ldp_telemetry.shared.mechanisms.sketches.cms import SketchReport
from tests.support.reports import create_task, envelopes, estimates, payloads, upload
from tests.support.servers import Server

HONEST, FAKES = 10_000, 1_000
SKETCH = {"mechanism": "cms", "epsilon": 4.0, "k": 32, "m": 1024, "hash_seed": 3}
TARGETS = [f"target-{i}" for i in range(10)]


def honest_values(rng: np.random.Generator) -> list[str]:
    return [f"w{int(x)}" for x in rng.zipf(1.3, HONEST) % 500]


@pytest.fixture(scope="module")
def honest() -> list[SketchReport]:
    """Return HONEST privatized reports of Zipf-distributed words (seeded)."""
    rng = np.random.default_rng(1)
    sketch = TaskConfig.from_dict({"task_id": "honest", **SKETCH})
    return payloads(sketch, honest_values(rng), rng)


def crafted(task, rng: np.random.Generator, weight: int | None) -> list[SketchReport]:
    """MGA reports: the targets' bits in a random row; padded with ones up to ``weight``."""
    cms = task.mechanism_object
    keys = cms.keys(TARGETS)
    reports = []
    for _ in range(FAKES):
        row = int(rng.integers(cms.k))
        bits = np.zeros(cms.m, dtype=bool)
        bits[cms.hashes.buckets(keys, np.full(len(keys), row))] = True
        if weight is not None:
            free = np.flatnonzero(~bits)
            bits[rng.choice(free, weight - int(bits.sum()), replace=False)] = True
        reports.append(SketchReport(row, np.packbits(bits).tobytes()))
    return reports


def test_unpadded_fake_reports_are_refused_and_honest_ones_kept(
    server: Server, honest: list[SketchReport]
) -> None:
    task = create_task(server.url, task_id="poison-unpadded", **SKETCH)
    rng = np.random.default_rng(1)
    accepted = upload(server.url, task, envelopes(task, honest))
    assert accepted >= 0.999 * HONEST
    assert upload(server.url, task, envelopes(task, crafted(task, rng, None))) <= 0.05 * FAKES

    answer = estimates(server.url, task.task_id, candidates=TARGETS, fake_fraction=0.01).json()
    # The sums hold honest reports only, but the refusals of the bucket give the attack away.
    anomaly = answer["anomaly"]
    assert anomaly["implausible_refused"] >= 0.95 * FAKES and anomaly["suspected"] is True
    tests = {c["test"]: c for c in anomaly["checks"]}
    assert set(tests) == {"bit_weight", "row_spread", "implausible_reports"}
    assert abs(tests["bit_weight"]["z"]) < SUSPECT_Z and tests["row_spread"]["z"] < SUSPECT_Z
    bound = answer["poisoning"]
    reach = task.mechanism_object.reach()
    assert bound["fake_reports"] == 0.01 * answer["n"]
    assert bound["count_shift"]["up"] == 0.01 * answer["n"] * reach.high


def test_an_honest_population_is_not_flagged(server: Server, honest: list[SketchReport]) -> None:
    task = create_task(server.url, task_id="poison-honest", **SKETCH)
    upload(server.url, task, envelopes(task, honest))
    anomaly = estimates(server.url, task.task_id, candidates=TARGETS).json()["anomaly"]
    assert anomaly["suspected"] is False and anomaly["implausible_refused"] == 0


def test_fake_reports_padded_to_the_band_top_pass_but_flag_the_sums(
    server: Server, honest: list[SketchReport]
) -> None:
    task = create_task(server.url, task_id="poison-padded", **SKETCH)
    rng = np.random.default_rng(2)
    upload(server.url, task, envelopes(task, honest))
    top = task.mechanism_object.band.high
    assert upload(server.url, task, envelopes(task, crafted(task, rng, top))) == FAKES
    answer = estimates(server.url, task.task_id, candidates=TARGETS).json()
    weight = next(c for c in answer["anomaly"]["checks"] if c["test"] == "bit_weight")
    assert answer["anomaly"]["suspected"] is True and weight["z"] > 10


def test_fake_fraction_is_refused_where_estimates_are_not_counts(server: Server) -> None:
    task = create_task(
        server.url, task_id="poison-numeric", mechanism="numeric", epsilon=1.0, lo=0.0, hi=1.0
    )
    response = estimates(server.url, task.task_id, fake_fraction=0.1)
    assert response.status_code == 400
    assert "fake_fraction" in response.json()["detail"]


def test_normalize_projects_a_whole_domain_onto_counts_summing_to_n(server: Server) -> None:
    domain = [f"d{i}" for i in range(8)]
    task = create_task(
        server.url, task_id="poison-grr", mechanism="grr", epsilon=1.0, domain=domain
    )
    rng = np.random.default_rng(4)
    values = [domain[i] for i in rng.choice(8, 3_000, p=[0.5, 0.3, 0.2, 0, 0, 0, 0, 0])]
    upload(server.url, task, envelopes(task, payloads(task, values, rng)))
    rows = estimates(server.url, task.task_id, normalize=True).json()["estimates"]
    normalized = np.array([row["normalized"] for row in rows])
    assert normalized.min() >= 0 and normalized.sum() == pytest.approx(3_000)
    refused = estimates(server.url, task.task_id, normalize=True, candidates=domain[:2])
    assert refused.status_code == 400 and "whole domain" in refused.json()["detail"]
