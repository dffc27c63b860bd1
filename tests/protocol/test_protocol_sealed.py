"""PROTOCOL.md §10 is enough: the independent client (written from PROTOCOL.md alone)
seals reports that a real collector opens and counts exactly."""

from __future__ import annotations

import time
from pathlib import Path

import requests

from tests.protocol import independent_client as ic
from tests.protocol import independent_dimensions as idim
from tests.protocol import independent_sealing as sealing
from tests.support.servers import ADMIN, ANALYST, bearer, start_sealing_server

DOMAIN = ["north", "south", "east", "west"]
POPULATION = ["north"] * 120 + ["south"] * 60 + ["east"] * 20


def test_the_collector_opens_the_independent_clients_sealed_reports(tmp_path: Path) -> None:
    server = start_sealing_server(tmp_path / "sealed.sqlite3")
    try:
        created = requests.post(
            f"{server.url}/v1/tasks",
            headers=bearer(ADMIN),
            timeout=10,
            json={
                "task_id": "indep-sealed",
                "mechanism": "grr",
                "epsilon": 2.0,
                "domain": DOMAIN,
                "min_batch_size": 10,
                "sealed": True,
            },
        )
        assert created.status_code == 201, created.text
        task = ic.get_task(server.url, "indep-sealed")  # fingerprint: `sealed` in, `seal` out
        reports = [
            sealing.seal(task, ic.envelope(task, time.time(), ic.grr(task, v))) for v in POPULATION
        ]
        assert len({len(r["sealed"]) for r in reports}) == 1  # §10's padding: one length
        answer = ic.upload(server.url, "indep-sealed", reports)
        assert answer == {"accepted": len(POPULATION), "rejected": []}
        estimates = requests.post(
            f"{server.url}/v1/tasks/indep-sealed/estimates",
            headers=bearer(ANALYST),
            json={},
            timeout=30,
        ).json()
        assert estimates["n"] == len(POPULATION)

        # 1.1: a sealed task with dimensions; dims stay in the clear and are bound in info.
        created = requests.post(
            f"{server.url}/v1/tasks",
            headers=bearer(ADMIN),
            timeout=10,
            json={
                "task_id": "indep-sealed-dims",
                "mechanism": "grr",
                "epsilon": 2.0,
                "domain": DOMAIN,
                "min_batch_size": 10,
                "sealed": True,
                "dimensions": [{"name": "platform", "values": ["android", "ios"]}],
            },
        )
        assert created.status_code == 201, created.text
        task = ic.get_task(server.url, "indep-sealed-dims")
        given = [{"platform": "ios"}, {"platform": "web"}]
        reports = [
            sealing.seal(
                task, idim.report(ic.envelope(task, time.time(), ic.grr(task, v)), task, g)
            )
            for v, g in zip(POPULATION[:40], given * 20, strict=True)
        ]
        assert {r["dims"]["platform"] for r in reports} == {"ios", "other"}
        moved = {**reports[0], "dims": {"platform": "android"}}  # info binds the dims
        answer = ic.upload(server.url, "indep-sealed-dims", [*reports, moved])
        assert answer["accepted"] == 40
        assert [r["reason"] for r in answer["rejected"]] == ["sealed_invalid"]
    finally:
        server.kill()
