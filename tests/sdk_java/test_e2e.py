"""The Java SDK on the JVM against a real collector: every kind counted exactly, estimates
within 4 standard errors of the truth.

Each simulated device is a client of its own (its own secret and budget) that records one
value per task and closes (E2eDriver "devices" in sdk-java/src/test/java).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.sdk_java.helpers import run_driver
from tests.support import every_kind

pytestmark = [pytest.mark.timeout(600), pytest.mark.usefixtures("java_sdk")]
TASKS = every_kind.tasks("java", protocol_1_1=True)


def test_every_kind_counted_exactly_and_estimated(collector_url: str, tmp_path: Path) -> None:
    every_kind.create(collector_url, TASKS)
    plan = every_kind.device_values(TASKS, np.random.default_rng(40))
    stats = run_driver({"mode": "devices", "endpoint": collector_url, "values": plan}, tmp_path)
    sent = every_kind.DEVICES * len(TASKS)
    assert stats == {"sent": sent, "queued": 0, "dropped": {}, "rejected": {}}
    every_kind.check_answers(collector_url, TASKS, plan)
