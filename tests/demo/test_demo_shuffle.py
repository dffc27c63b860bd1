"""`make demo-shuffle`, small: devices → shuffler → collector, estimates with central ε."""

from __future__ import annotations

import pytest

from demo.shuffle import main, run


@pytest.mark.timeout(180)
def test_estimates_carry_central_epsilon(capsys: pytest.CaptureFixture[str]) -> None:
    emoji, dark, waiting = run(devices=400, batch_min=100, seed=5)
    for answer in (emoji, dark):
        assert answer["smallest_batch"] >= 100
        assert 0 < answer["central_epsilon"] < answer["effective_epsilon"]
    # every report is counted or still waits for enough other uploads (< batch_min per task)
    assert emoji["n"] + dark["n"] + waiting == 800 and waiting < 200
    assert main(["--devices", "200", "--batch-min", "60"]) == 0
    assert "central ε" in capsys.readouterr().out
