"""python -m demo.breakdowns, small: the documented 20,000-device command runs and passes."""

from __future__ import annotations

import pytest

from demo.breakdowns.__main__ import main
from demo.breakdowns.scenario import THIN_DEVICES, population

pytestmark = [pytest.mark.timeout(180), pytest.mark.usefixtures("seeded_breakdown_devices")]


def test_population_plants_the_thin_slice_and_is_seeded() -> None:
    devices = population(500, seed=1)
    assert devices == population(500, seed=1) != population(500, seed=2)
    assert sum(d.slice == ("web", "5.1") for d in devices) == THIN_DEVICES
    assert {d.slice[0] for d in devices} == {"android", "ios", "web", "other"}
    assert {d.slice[1] for d in devices} == {"5.1", "5.2", "5.3", "5.4", "other"}
    with pytest.raises(ValueError, match="at least"):
        population(59, seed=1)


def test_the_command_passes_at_small_scale(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--devices", "400", "--stores", "sqlite", "--sdks", "python"]) == 0
    out = capsys.readouterr().out
    assert "| sqlite | python | 400 |" in out
    assert "rolled up into" in out and "web/5.1" in out
    assert "'dimension_value_unknown': 1" in out and "FAILED" not in out
