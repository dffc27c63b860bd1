"""`make demo-shuffle`, small: devices → shuffler → collector, estimates with central ε."""

from __future__ import annotations

import pytest

from demo.shuffle import run, show


@pytest.mark.timeout(180)
def test_estimates_carry_central_epsilon() -> None:
    emoji, dark, waiting = run(devices=400, batch_min=100, seed=5)
    for answer in (emoji, dark):
        assert answer["smallest_batch"] >= 100
        assert 0 < answer["central_epsilon"] < answer["effective_epsilon"]
    # every report is counted or still waits for enough other uploads (< batch_min per task)
    assert emoji["n"] + dark["n"] + waiting == 800 and waiting < 200


def test_show_prints_both_epsilons(capsys: pytest.CaptureFixture[str]) -> None:
    row = {"value": "x", "estimate": 3.0, "ci_low": 1.0, "ci_high": 5.0}
    answer = {"n": 9, "effective_epsilon": 4.0, "estimates": [row], "delta": 1e-8}
    show("t", {**answer, "central_epsilon": 0.5, "smallest_batch": 9})
    show("t", {**answer, "central_epsilon": None, "central_epsilon_reason": "why"})
    out = capsys.readouterr().out
    assert "local ε 4.0000; central ε 0.5000" in out and "no central ε: why" in out
