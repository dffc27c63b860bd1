"""End to end on PostgreSQL: Python SDK devices with public dimensions against a real collector.

The breakdowns scenario (demo/breakdowns/scenario.py, the one ``python -m demo.breakdowns``
runs at 20,000 devices) at 3,000 devices: 3 platforms × 4 app versions, plus values outside
the lists (which land in ``other``), a 30-device slice, a distribution of values per
platform, each device its own Client uploading over HTTP. Over the analyst's HTTP answers
(demo/breakdowns/checks.py): every row's n is exactly its slices' devices and the rows add
up to the task's n, every estimate lies within 4 SE of its row's truth, the 30-device slice
is rolled up, never shown alone, the unlisted values are counted in ``other``, and a raw
report whose dims break a rule is refused with its reason. Each device's noise comes from a
seeded generator (``seeded_breakdown_devices``), so the test repeats.

SQLite runs the same scenario and the same checks (``run.failures`` empty: the exact ones and
the 4-SE ones) in tests/demo/test_breakdowns.py (Python SDK, 400 devices, seeded) and their
exact ones in tests/sdk_js and tests/sdk_java (300 devices each); the store's slice reads and
roll-up counts are conformance-tested on both stores in tests/aggregator/slices. This test is
the scenario's one PostgreSQL run, at a size where every slice but the thin one is answered.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from demo.breakdowns.__main__ import run_one
from demo.breakdowns.checks import BAD_DIMS
from demo.breakdowns.scenario import THIN, population
from tests.support.postgres import PostgresServer

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("seeded_breakdown_devices")]
DEVICES = 3000


def test_slices_hold_the_devices_and_add_up_to_n(tmp_path: Path, postgres: PostgresServer) -> None:
    database = postgres.new_database()
    run = run_one("postgresql", "python", population(DEVICES, seed=38), tmp_path, database)
    assert run.failures == []
    assert run.delivery.sent == DEVICES
    sliced = [row for row in run.outcome.rows if row.group_by == "platform × app_version"]
    assert sum(row.n for row in sliced) == DEVICES
    assert sum(row.n for row in run.outcome.rows) == 3 * DEVICES  # by platform, by version
    assert len([row for row in sliced if row.own]) == 19  # every slice alone but the thin one
    assert [row.rolled_up for row in run.outcome.rows if row.rolled_up] == [(THIN,)]
    assert run.outcome.rejected == dict.fromkeys(BAD_DIMS, 1)
    assert 0 < run.outcome.max_z <= 4
    assert run.record_seconds < 60, f"{DEVICES} devices took {run.record_seconds:.0f} s"
