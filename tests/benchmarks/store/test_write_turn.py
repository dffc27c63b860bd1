"""The write-turn measurement runs both ways end to end (tiny, no timing claims)."""

from __future__ import annotations

import pytest

from benchmarks.store.write_turn import measure


@pytest.mark.timeout(180)
@pytest.mark.parametrize("way", ["gather first", "turn first", "one writer"])
def test_both_ways_commit_uploads_from_two_workers(way: str) -> None:
    found = measure(way, batch=2, threads=2, seconds=0.5)
    assert found["uploads_per_s"] > 0
    # four submitters over two writers (or one): a transaction holds at most what its
    # writer has in flight
    assert 1.0 <= found["per_group"] <= (4.0 if way == "one writer" else 2.0)
    assert found["cpu_us"] > 0
