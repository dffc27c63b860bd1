"""Protocol 1.1 beside 1.0 on one collector (PROTOCOL.md, top, §2, §11): a 1.0 device (the
independent client implementing 1.0 only) refuses the 1.1 task alone and is counted on
every other task, with its `LDP-Protocol: 1.0` or none at all; a 1.1 device's dims reports
are counted, and a wrong `dims` is refused alone with its own reason."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.protocol import independent_client as ic
from tests.protocol import independent_dimensions as idim
from tests.support.servers import ADMIN, ANALYST, bearer, start_server

pytestmark = pytest.mark.timeout(180)
DOMAIN = ["red", "green", "blue"]
DIMENSIONS = [
    {"name": "platform", "values": ["android", "ios", "web"]},
    {"name": "city", "values": ["Zürich", "Genève"]},
]


def _create(url: str, task_id: str, **fields: Any) -> None:
    spec = {"task_id": task_id, "mechanism": "grr", "epsilon": 2.0, "domain": DOMAIN}
    created = requests.post(
        f"{url}/v1/tasks",
        headers=bearer(ADMIN),
        json={**spec, "min_batch_size": 10, **fields},
        timeout=10,
    )
    assert created.status_code == 201, created.text


def _n(url: str, task_id: str) -> int:
    answer = requests.post(
        f"{url}/v1/tasks/{task_id}/estimates", headers=bearer(ANALYST), json={}, timeout=30
    )
    assert answer.status_code == 200, answer.text
    count: int = answer.json()["n"]
    return count


def _reports(task: dict[str, Any], count: int) -> list[dict[str, Any]]:
    return [ic.envelope(task, time.time(), ic.grr(task, DOMAIN[i % 3])) for i in range(count)]


def test_a_1_0_device_refuses_the_1_1_task_alone_and_is_counted_on_the_others(
    tmp_path: Path,
) -> None:
    server = start_server(tmp_path / "versions.sqlite3")
    try:
        _create(server.url, "plain")
        _create(server.url, "sliced", dimensions=DIMENSIONS)
        with urllib.request.urlopen(f"{server.url}/v1/tasks", timeout=10) as listed:
            served = {t["task_id"]: t["protocol"] for t in json.load(listed)["tasks"]}
        assert served == {"plain": "1.0", "sliced": "1.1"}  # 1.1 only with dimensions

        old = ("1.0",)  # the device implements 1.0 only
        with pytest.raises(ValueError, match=r"protocol '1\.1'"):
            ic.get_task(server.url, "sliced", implements=old)
        plain = ic.get_task(server.url, "plain", implements=old)  # refused the other alone
        with_header = ic.upload(server.url, "plain", _reports(plain, 30), protocol="1.0")
        without = ic.upload(server.url, "plain", _reports(plain, 20), protocol=None)
        assert with_header == {"accepted": 30, "rejected": []}
        assert without == {"accepted": 20, "rejected": []}  # §2: no header, still counted
        assert _n(server.url, "plain") == 50

        # A 1.1 device on the same collector: dims mapped by §11, counted.
        sliced = ic.get_task(server.url, "sliced")
        given = [{"platform": "ios", "city": "Zürich"}, {"platform": "Linux", "os": "x"}, None]
        reports = [idim.report(r, sliced, given[i % 3]) for i, r in enumerate(_reports(sliced, 30))]
        assert {r["dims"]["platform"] for r in reports} == {"ios", "other"}
        assert ic.upload(server.url, "sliced", reports) == {"accepted": 30, "rejected": []}

        # Wrong dims: each refused alone with its reason, the rest of the upload counted.
        wrong = _reports(sliced, 5)
        wrong[0]["dims"] = {"platform": "ios"}  # city missing
        wrong[1]["dims"] = {"platform": "ios", "city": "other", "os": "x"}  # undeclared
        wrong[2]["dims"] = {"platform": "iOS", "city": "other"}  # not in the list
        wrong[3] = idim.report(wrong[3], sliced, {"platform": "web"})
        wrong[4] = idim.report(wrong[4], sliced, {})
        answer = ic.upload(server.url, "sliced", wrong)
        assert answer["accepted"] == 2
        assert [r["reason"] for r in answer["rejected"]] == [
            "dimensions_missing",
            "dimension_undeclared",
            "dimension_value_unknown",
        ]
        # A 1.0 device that sent no dims to the 1.1 task would be refused, never counted.
        bare = ic.upload(server.url, "sliced", _reports(sliced, 1), protocol="1.0")
        assert [r["reason"] for r in bare["rejected"]] == ["dimensions_missing"]
        assert _n(server.url, "sliced") == 32
        assert _n(server.url, "plain") == 50  # untouched by the 1.1 task's traffic
    finally:
        server.kill()
