"""The sliced-fold measurement runs on both stores end to end (tiny, no timing claims)."""

from __future__ import annotations

import re

import pytest

from benchmarks.store.sliced_fold import main


@pytest.mark.timeout(300)
def test_one_fold_per_store_and_task_with_the_rows_it_rewrites(
    capsys: pytest.CaptureFixture[str],
) -> None:
    main(["--reports", "600", "--folds", "1"])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(",")[0] for line in lines] == ["SQLite", "PostgreSQL"] * 2
    rows = [int(re.sub(r"\D", "", line.rsplit(", ", 1)[1])) for line in lines]
    # the bucket's rows and the roll-up's: the same count on both stores; 600 reports touch
    # fewer rows in one slice than spread over 20
    assert rows[0] == rows[1] < rows[2] == rows[3] <= 2 * 600
