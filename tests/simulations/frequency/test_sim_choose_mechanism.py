"""choose_mechanism: closed-form RMSEs, their simulated check, and the recommended mechanism."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from simulations.frequency import choose_mechanism
from simulations.frequency.choose_mechanism import Result

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def result() -> Result:
    return choose_mechanism.compute(choose_mechanism.QUICK, np.random.default_rng(4))


def test_simulation_matches_the_closed_forms(result: Result) -> None:
    for cell in result.cells:
        assert cell.simulated == pytest.approx(cell.theory, rel=0.2), cell


def test_rr_theory_is_the_textbook_form(result: Result) -> None:
    n = choose_mechanism.QUICK.n
    for cell in (c for c in result.cells if c.d == 2 and c.mechanism == "rr/grr"):
        growth = math.exp(cell.epsilon)
        assert cell.theory == pytest.approx(math.sqrt(n * growth) / (growth - 1), rel=1e-6)


def test_recommendations(result: Result) -> None:
    winners = choose_mechanism.best(result.cells)
    assert winners[(1.0, 2)] == "rr/grr"  # small domain: direct randomized response
    assert winners[(4.0, 64)] == "rr/grr"  # large ε keeps GRR ahead for moderate d
    assert winners[(1.0, 64)] == "cms"  # GRR's error grows with d, the sketches' does not
    # At large ε OLH's GRR over g = 55 buckets beats CMS's ε/2 per bit: its variance
    # 4e^ε/(e^ε−1)² ≈ 0.077·n against CMS's (c_ε²−1)/4 ≈ 0.18·n (Wang et al. 2017).
    assert winners[(4.0, 4096)] == "olh"
    olh = next(c for c in result.cells if c.mechanism == "olh" and c.d == 4096 and c.epsilon == 4.0)
    assert olh.simulated == pytest.approx(olh.theory, rel=0.25)


def test_table_lists_every_pair(result: Result, tmp_path: Path) -> None:
    sizes = choose_mechanism.QUICK
    table = choose_mechanism.table(result)
    assert len(table.rows) == len(sizes.epsilons) * len(sizes.domains)
    _, md_path = table.write(tmp_path, "c")
    text = md_path.read_text()
    assert "| most accurate |" in text and "theory" not in text.split("\n| ")[1]
    assert choose_mechanism.plot(result, tmp_path / "c.png").stat().st_size > 20_000
