"""The Java SDK's dimensions (PROTOCOL.md §11) against a real collector: 300 devices over 3
platforms and 3 versions plus values outside the lists (unlisted, missing, undeclared, another
case), given once to the client or on each record; the SDK maps each to the task's lists, the
collector accepts every report and counts each in its slice, sealed (§10) too."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from demo.breakdowns.__main__ import run_one
from demo.breakdowns.scenario import population
from ldp_telemetry.aggregator.core import config
from ldp_telemetry.aggregator.store import open_store
from tests.sdk_java.helpers import run_driver
from tests.support.reports import create_task_json, estimates_json
from tests.support.servers import start_sealing_server, start_server

pytestmark = [pytest.mark.timeout(600), pytest.mark.usefixtures("java_sdk")]
DEVICES = 300
PLATFORMS = ["android", "ios", "web"]
VERSIONS = ["5.1", "5.2", "5.3"]
DIMENSIONS = [
    {"name": "platform", "values": PLATFORMS},
    {"name": "app_version", "values": VERSIONS},
]
FRUIT = ["apple", "banana", "cherry"]


def given(rng: np.random.Generator) -> list[dict[str, Any]]:
    """Return what each device's app hands the SDK: mostly listed values, some not."""
    platforms = [*PLATFORMS, "linux", "iOS", None]  # None: the name is not given at all
    versions = [*VERSIONS, "6.0", "5.2 ", None]
    out = []
    for i in range(DEVICES):
        dims: dict[str, Any] = {}
        platform = platforms[int(rng.integers(len(platforms)))]
        version = versions[int(rng.integers(len(versions)))]
        if platform is not None:
            dims["platform"] = platform
        if version is not None:
            dims["app_version"] = version
        if i % 7 == 0:
            dims["country"] = "ch"  # undeclared: dropped by the SDK
        out.append(dims)
    return out


def expected_slice(dims: dict[str, Any]) -> int:
    """The slice index by hand (§11): mixed radix, "other" = len(values), platform first."""

    def index(values: list[str], value: Any) -> int:
        return values.index(value) if value in values else len(values)

    return index(PLATFORMS, dims.get("platform")) * 4 + index(VERSIONS, dims.get("app_version"))


@pytest.mark.parametrize("sealed", [False, True])
def test_java_devices_dimensions_counted_per_slice(tmp_path: Path, sealed: bool) -> None:
    db = tmp_path / "dims.sqlite3"
    server = start_sealing_server(db) if sealed else start_server(db)
    rng = np.random.default_rng(40)
    dimensions = given(rng)
    fruit = [FRUIT[int(x)] for x in rng.integers(3, size=DEVICES)]
    try:
        created = create_task_json(
            server.url,
            task_id="java-dims",
            mechanism="grr",
            epsilon=3.0,
            domain=FRUIT,
            min_batch_size=1,
            dimensions=DIMENSIONS,
            sealed=sealed,
        )
        assert created["protocol"] == "1.1" and created.get("sealed", False) is sealed
        plan = {
            "mode": "devices",
            "endpoint": server.url,
            "values": {"java-dims": fruit},
            "dimensions": dimensions,
        }
        stats = run_driver(plan, tmp_path)
        assert stats == {"sent": DEVICES, "queued": 0, "dropped": {}, "rejected": {}}
        assert estimates_json(server.url, "java-dims", candidates=FRUIT)["n"] == DEVICES
    finally:
        server.kill()
    store = open_store(str(db), config.load(str(tmp_path), {"DATABASE": str(db)}))
    stored = store.get_task("java-dims")
    assert stored is not None
    counts = store.slice_counts(stored.config, None, None)
    truth = Counter(expected_slice(d) for d in dimensions)
    assert counts == dict(truth)
    # Out-of-list values landed in "other": platform other is slices 12..15, version other 3, 7, ...
    assert (
        sum(n for s, n in counts.items() if s >= 12)
        == sum(1 for d in dimensions if d.get("platform") not in PLATFORMS)
        > 0
    )
    assert (
        sum(n for s, n in counts.items() if s % 4 == 3)
        == sum(1 for d in dimensions if d.get("app_version") not in VERSIONS)
        > 0
    )


def test_java_devices_in_the_breakdowns_scenario(tmp_path: Path) -> None:
    """python -m demo.breakdowns's Java path, small: every exact check holds (rows' n, sums,
    other, the thin slice rolled up, raw dims refused). The noise is the SDK's CSPRNG, so
    the 4-SE checks are left to the seeded Python run (tests/client/dimensions)."""
    run = run_one("sqlite", "java", population(300, seed=38), tmp_path, None)
    assert run.outcome.exact == []
    assert (run.delivery.sent, run.delivery.dropped, run.delivery.rejected) == (300, {}, {})
