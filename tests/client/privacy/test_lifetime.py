"""A device's lifetime ε∞ over a year of daily reports whose value changes every day.

The ledger charges each permanent response drawn: per value under RAPPOR's layers (a value
that moves among 100 values reaches the device-wide cap and falls silent), per hashed bucket
under LOLOHA (at most g, whatever the values do). Real SDK clients over HTTP against the real
collector, in memory and on disk (restarted every 30 days); time is simulated.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from ldp_telemetry.client import Client, InMemoryTransport, Timeouts
from ldp_telemetry.shared import TaskConfig
from tests.support.collectors import make_app, served_in_thread
from tests.support.servers import ADMIN

pytestmark = pytest.mark.timeout(300)
DAY = 86_400
DAYS = 365
DOMAIN = [f"screen-{i}" for i in range(100)]
PATIENT = Timeouts(connect=10, read=30, config=10)
# A year of daily buckets ends today: the collector accepts reports this old only with a
# window that long (the default is a week).
WINDOW = (DAYS + 2) * DAY


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[str]:
    with served_in_thread(make_app(str(tmp_path / "c.sqlite3"), ACCEPTANCE_WINDOW=WINDOW)) as url:
        yield url


def create_task(url: str, **params: Any) -> dict[str, Any]:
    response = requests.post(
        f"{url}/v1/tasks", json=params, timeout=10, headers={"Authorization": f"Bearer {ADMIN}"}
    )
    assert response.status_code == 201, response.text
    return response.json()


class Year:
    """A simulated clock over the last 365 days: day d at 01:00 UTC."""

    def __init__(self) -> None:
        self.first = (int(time.time()) // DAY - (DAYS - 1)) * DAY
        self.day = 0

    def __call__(self) -> float:
        return float(self.first + self.day * DAY + 3_600)


@pytest.mark.parametrize("storage", ["memory", "disk"])
@pytest.mark.parametrize("g", [2, "optimal"])
def test_a_loloha_device_draws_at_most_g_permanent_responses_in_a_year(
    collector: str, tmp_path: Path, storage: str, g: Any
) -> None:
    layer = {"variant": "loloha", "epsilon_inf": 2.0, "epsilon_1": 1.0, "g": g}
    served = create_task(
        collector, task_id="screen", mechanism="grr", domain=DOMAIN, longitudinal=layer
    )
    assert served["protocol"] == "1.1"
    buckets, epsilon_inf = served["derived"]["g"], served["effective_epsilon_inf"]
    year = Year()
    restart_every = 30 if storage == "disk" else DAYS  # memory: the ledger lives in the process
    sent, client = 0, None
    for day in range(DAYS):
        year.day = day
        if day % restart_every == 0:
            if client is not None:
                assert client.close(30)
                sent += client.stats().sent
            client = Client(
                collector,
                task_ids=["screen"],
                data_dir=tmp_path / "device" if storage == "disk" else None,
                clock=year,
                timeouts=PATIENT,
                atexit_timeout=None,
            )
            assert client.wait_for_tasks(timeout=10)
        assert client is not None
        assert client.record("screen", DOMAIN[(day * 37) % 100])  # a new value every day
    assert client is not None
    stats = client.stats()
    assert stats.dropped == {}
    assert 1 <= stats.permanent_responses["screen"] <= buckets
    assert stats.epsilon_inf["screen"] == pytest.approx(
        stats.permanent_responses["screen"] * epsilon_inf
    )
    assert stats.epsilon_inf["screen"] <= buckets * 2.0
    assert client.close(30)
    sent += client.stats().sent
    assert sent == DAYS and client.stats().rejected == {}


def test_rappors_layers_charge_each_value_and_the_cap_silences_the_device() -> None:
    """The same year under RAPPOR's layers: ε∞ per distinct value, then the default cap."""
    task = TaskConfig.create(
        task_id="screen",
        mechanism="grr",
        domain=DOMAIN,
        longitudinal={"epsilon_inf": 2.0, "epsilon_1": 1.0},
    )
    year = Year()
    client = Client(
        "memory://",
        transport=InMemoryTransport([task]),
        tasks=[task],
        clock=year,
        atexit_timeout=None,
    )
    answered = 0
    for day in range(DAYS):
        year.day = day
        answered += client.record("screen", DOMAIN[(day * 37) % 100])
    stats = client.stats()
    epsilon_inf = task.to_dict()["effective_epsilon_inf"]
    drawn = math.floor((64 + 1e-9) / epsilon_inf)  # the default max_epsilon_inf is 64
    assert stats.permanent_responses["screen"] == drawn
    # The values whose PRR was drawn first keep being answered when they come back; every
    # other value is refused for the rest of the device's life.
    values = [DOMAIN[(day * 37) % 100] for day in range(DAYS)]
    first = set(list(dict.fromkeys(values))[:drawn])
    assert answered == sum(value in first for value in values) < DAYS / 2
    assert stats.dropped == {"epsilon_inf_exhausted": DAYS - answered}
    client.close(5)
