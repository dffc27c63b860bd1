"""The fold-lock measurement folds both ways end to end (tiny, no timing claims)."""

from __future__ import annotations

import pytest

from benchmarks.store.fold_lock import measure


@pytest.mark.timeout(180)
def test_both_ways_fold_and_time_their_steps() -> None:
    found = measure(rounds=1, mib=0.05)
    assert [way for way, _ in found] == ["inside the upload", "off the lock"]
    inside, off = (spent for _, spent in found)
    assert inside["write lock held"] > 0 and inside["fold (numpy)"] > 0
    assert off["snapshot: fold (numpy)"] > 0 and "fold (numpy)" not in off  # not under the lock
    assert off["write rows"] > 0 and off["check n"] > 0
