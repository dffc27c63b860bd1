"""commit_cost commits groups and reads their WAL frames back (tiny, no timing claims)."""

from __future__ import annotations

import pytest

from benchmarks.store.commit_cost import measure


@pytest.mark.timeout(180)
def test_a_commit_s_frames_are_read_back_by_owner() -> None:
    small, large = measure(size=1, groups=30), measure(size=8, groups=30)
    assert small["cpu_per_upload_us"] > 0 and large["cpu_per_group_us"] > 0
    # every commit writes the staged row's page and the staged_size row's page at least
    for found in (small, large):
        assert found["frames_by_owner"]["staged_size"] == pytest.approx(1.0)
    # each new id lands on a page of the id index: 8 ids a commit dirty more of them than 1
    assert large["frames_by_owner"]["seen_by_id"] > 2 * small["frames_by_owner"]["seen_by_id"]
