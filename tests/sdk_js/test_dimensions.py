"""The TypeScript SDK's dimensions (PROTOCOL.md §11) against a real collector: devices give
their own values (listed, unlisted, undeclared, not NFC-equal), the SDK maps them to the
task's lists, and every report is accepted and counted; free-form values never arrive."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.sdk_js.helpers import node
from tests.support.reports import create_task_json, estimates_json

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("sdk")]
DEVICES = 60
DIMENSIONS = [
    {"name": "platform", "values": ["android", "ios", "web"]},
    {"name": "city", "values": ["Zürich", "Genève"]},
]
GIVEN = [  # what the app hands the client: the SDK keeps listed values, else other
    {"platform": "ios", "city": "Zürich"},
    {"platform": "iOS", "city": "Zu\u0308rich", "country": "ch"},
    {"platform": "web"},
]


def test_ts_devices_dimensions_are_mapped_and_counted(collector_url: str, tmp_path: Path) -> None:
    create_task_json(
        collector_url,
        task_id="js-dims",
        mechanism="grr",
        epsilon=3.0,
        domain=["a", "b"],
        min_batch_size=1,
        dimensions=DIMENSIONS,
    )
    rng = np.random.default_rng(38)
    values = [str(v) for v in rng.choice(["a", "b"], DEVICES)]
    plan = {
        "endpoint": collector_url,
        "values": {"js-dims": values},
        "concurrency": 10,
        "dimensions": [GIVEN[i % 3] for i in range(DEVICES)],
    }
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    stats = json.loads(node("test/python/devices.js", str(path)).stdout)
    del stats["retries"]
    assert stats == {"sent": DEVICES, "queued": 0, "dropped": {}, "rejected": {}}
    assert estimates_json(collector_url, "js-dims")["n"] == DEVICES
