"""`make demo`, small: the real collector, per-device SDK clients, estimates over HTTP."""

from __future__ import annotations

import math

import pytest

from demo.__main__ import main, run_demo
from demo.population import VOCABULARY, make_population


def test_population_is_seeded_and_zipf_shaped() -> None:
    first, again = make_population(2000, seed=3), make_population(2000, seed=3)
    assert first == again
    counts = first.emoji_counts()
    assert counts[VOCABULARY[0]] > counts[VOCABULARY[5]] > counts[VOCABULARY[30]]


@pytest.mark.timeout(120)
def test_demo_delivers_every_report_and_estimates_cover_the_truth() -> None:
    result = run_demo(3000, seed=11)
    assert result.delivered, (result.stats, result.accepted, result.rejected)
    assert result.emoji["n"] == result.dark_mode["n"] == 3000
    truth = result.population.emoji_counts()
    rows = result.emoji["estimates"]
    inside = sum(r["ci_low"] <= truth[r["value"]] <= r["ci_high"] for r in rows)
    # 95% intervals over 40 candidates: fewer than 30 inside has probability < 1e-6.
    assert inside >= 30
    yes = result.dark_mode["estimates"][0]
    assert abs(yes["estimate"] - result.population.dark_mode_count()) < 5 * yes["std_error"]
    assert math.isclose(result.dark_mode["effective_epsilon"], math.log(3))
    # The most typed word (a quarter of the devices) is discovered, flagged reliable.
    top_word = result.population.word_counts().most_common(1)[0][0]
    reliable = [r["value"] for r in result.words["heavy_hitters"] if r["reliable"]]
    assert result.words["n"] == 3000 and top_word in reliable


@pytest.mark.timeout(120)
def test_main_prints_the_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--devices", "1000", "--no-progress", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "intervals contain the true count" in out
    assert "dark mode (rr, n=1000" in out and "the collector was stopped" in out
    assert "words typed, discovered without a list (hh, n=1000" in out


def test_the_cluster_demo_counts_every_device_once(capsys: pytest.CaptureFixture[str]) -> None:
    from demo.cluster import main as cluster_main

    assert cluster_main(["--devices", "2000"]) == 0
    out = capsys.readouterr().out
    assert "reports counted: 2,000 of 2,000 devices" in out
    assert "node-b killed (SIGKILL)" in out and "every device counted exactly once" in out
