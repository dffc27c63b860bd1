"""The TypeScript SDK's dimensions (PROTOCOL.md §11) against a real collector: devices give
their own values (listed, unlisted, undeclared, not NFC-equal), the SDK maps them to the
task's lists, every report is accepted, and the collector counts each in its slice."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from demo.breakdowns.__main__ import run_one
from demo.breakdowns.scenario import population
from ldp_telemetry.aggregator.core import config
from ldp_telemetry.aggregator.store import open_store
from tests.sdk_js.helpers import node
from tests.support.reports import create_task_json, estimates_json
from tests.support.servers import start_sealing_server, start_server

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


@pytest.mark.parametrize("sealed", [False, True])
def test_ts_devices_dimensions_are_mapped_and_counted(tmp_path: Path, sealed: bool) -> None:
    """Sealed too: dims in the clear beside the ciphertext, bound in its info (§10)."""
    db = tmp_path / "dims.sqlite3"
    server = start_sealing_server(db) if sealed else start_server(db)
    try:
        _record(server.url, tmp_path, sealed)
    finally:
        server.kill()
    store = open_store(str(db), config.load(str(tmp_path), {"DATABASE": str(db)}))
    stored = store.get_task("js-dims")
    assert stored is not None
    task = stored.config
    # ios/Zürich is slice 1·3 + 0 = 3; other/other 3·3 + 2 = 11; web/other 2·3 + 2 = 8.
    assert store.slice_counts(task, None, None) == {
        3: DEVICES // 3,
        8: DEVICES // 3,
        11: DEVICES // 3,
    }


def _record(collector_url: str, tmp_path: Path, sealed: bool) -> None:
    """Create the task and run the devices: every report accepted, none dropped."""
    create_task_json(
        collector_url,
        task_id="js-dims",
        mechanism="grr",
        epsilon=3.0,
        domain=["a", "b"],
        min_batch_size=1,
        dimensions=DIMENSIONS,
        sealed=sealed,
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


def test_ts_devices_in_the_breakdowns_scenario(tmp_path: Path) -> None:
    """python -m demo.breakdowns's TypeScript path, small: every exact check holds (rows' n,
    sums, other, the thin slice rolled up, raw dims refused). The noise is the SDK's CSPRNG,
    so the 4-SE checks are left to the seeded Python run (tests/client/dimensions)."""
    run = run_one("sqlite", "typescript", population(300, seed=38), tmp_path, None)
    assert run.outcome.exact == []
    assert (run.delivery.sent, run.delivery.dropped, run.delivery.rejected) == (300, {}, {})
