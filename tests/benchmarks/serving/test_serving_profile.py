"""The profile's arithmetic (stages of py-spy stacks, CPU split per thread) and the decode
benchmark's run; no timing claims."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.serving import decode as decode_bench
from benchmarks.serving.cpu_profile import OTHER, RUST, stage_of, stages

LOOP = "BaseEventLoop.run_forever (asyncio/base_events.py:607)"
UPLOAD = (
    "RsgiBridge._upload (ldp_telemetry/aggregator/serving/rsgi_bridge.py:171);"
    "Intake.check (ldp_telemetry/aggregator/core/intake.py:98)"
)
SQLITE = "ldp_telemetry/aggregator/store/sqlite/backend.py"
WRITER = "GroupCommitter._run (ldp_telemetry/aggregator/store/group_commit.py:176)"


def test_a_sample_belongs_to_its_deepest_known_frame() -> None:
    assert stage_of(f"{LOOP};{UPLOAD}") == "intake (task, auth, quotas, answer)"
    decode = (
        f"{LOOP};{UPLOAD};decode_batch (ldp_telemetry/shared/codec.py:154);b64decode (base64.py:88)"
    )
    assert stage_of(decode) == "shared decode + validation"
    commit = (
        f"{WRITER};SqliteStore._transaction (ldp_telemetry/aggregator/store/sqlite/backend.py:109)"
    )
    assert stage_of(commit).startswith("SQLite")
    assert stage_of("<module> (somewhere.py:1)") == OTHER


def test_each_threads_cpu_is_split_as_its_samples_and_waits_are_dropped() -> None:
    stacks = [
        f"thread (10): MainThread;{LOOP};{UPLOAD} 3",
        f"thread (10): MainThread;{LOOP};EpollSelector.select (selectors.py:468) 50",
        f"thread (10): MainThread;{LOOP};decode_batch (ldp_telemetry/shared/codec.py:154) 1",
        f"thread (11): ldp-group-commit;{WRITER} 40",  # waiting for work
        f"thread (11): ldp-group-commit;{WRITER};commit ({SQLITE}:109) 2",
        "thread (12) 5",  # granian's runtime, no Python frame
    ]
    found = stages({10: 2.0, 11: 1.0, 12: 0.5, 13: 0.25}, stacks)
    assert found["intake (task, auth, quotas, answer)"] == pytest.approx(1.5)
    assert found["shared decode + validation"] == pytest.approx(0.5)
    assert found["SQLite (transaction, seen ids, staging rows)"] == pytest.approx(1.0)
    assert found[RUST] == pytest.approx(0.75)  # thread 12, and 13 that was never sampled
    assert sum(found.values()) == pytest.approx(3.75)


def test_decode_bench_measures_every_contender(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(decode_bench, "WORK", 50)
    found = decode_bench.measure(1, np.random.default_rng(1))
    assert set(found) == set(decode_bench.SIZES)
    for size in decode_bench.SIZES:
        assert {"decode_batch", "parse: json"} <= set(found[size])
        assert all(spent >= 0 for spent in found[size].values())


def test_uvloops_own_work_is_the_event_loops() -> None:
    worker = (
        "<module> (granian/server/mp.py:1);MPServer._spawn_rsgi_worker (granian/server/mp.py:317)"
    )
    assert stage_of(worker).startswith("event loop")
    deadline = f"{worker};RsgiBridge._body (rsgi_bridge.py:160);_Deadline.read (rsgi_bridge.py:97)"
    assert stage_of(deadline) == "body read (RSGI protocol())"
