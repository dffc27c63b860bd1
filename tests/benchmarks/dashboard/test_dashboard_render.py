"""The dashboard benchmark still runs end to end (tiny sizes, no timing claims)."""

from __future__ import annotations

import sys

import pytest

from benchmarks.dashboard import render as dashboard_render


@pytest.mark.timeout(120)
def test_the_dashboard_benchmark_renders_every_page(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["dashboard_render", "--tasks", "5", "--reports", "3000", "--repeat", "1"]
    monkeypatch.setattr(sys, "argv", argv)
    dashboard_render.main()  # every page must answer 200 without a problem shown
    printed = capsys.readouterr().out
    for label in ("task list (5 tasks)", "cms task, 9 candidates", "hh task, heavy hitters"):
        assert label in printed, printed
