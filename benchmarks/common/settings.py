"""Workload sizes of the three benchmark modes and the fixed parameters measured."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ldp_telemetry.aggregator.serving import DEFAULT_SERVER, SERVERS

EPSILON = 4.0  # docs/design.md's reference epsilon for the sketches
RR_EPSILON = math.log(3)  # the seeds' alpha = beta = 1/2
CLIENT_K, CLIENT_M = 65_536, 1024  # Apple's sketch; the client's cost barely depends on k
SKETCH_KS = (2048, 65_536)
SKETCH_M = 1024
CANDIDATES = 10_000
HTTP_BATCH = 500
ACCURACY_K, ACCURACY_M = 1024, 1024
DOMAIN_D = 256  # oue and ss: a mid-size domain (e.g. countries)


@dataclass(frozen=True)
class Sizes:
    """How much work each measurement does; every time is a median over ``repeats``."""

    repeats: int
    sketch_ks: tuple[int, ...]  # k of the aggregation and estimate measurements (m = 1024)
    calls: int  # privatize calls per repeat (one value per call)
    batch: int  # values per privatize_many call
    aggregate: dict[int, int]  # k -> reports per add_many batch (ours)
    baseline_aggregate: int  # reports pure-ldp aggregates one by one per repeat
    estimate_reports: int  # reports in the sums an estimate reads
    candidates: int  # candidates per estimate (ours)
    baseline_sample: dict[int, int]  # k -> candidates pure-ldp estimates before scaling
    accuracy_reports: int
    accuracy_target: int  # reports holding the value whose count's SD is measured
    accuracy_trials: int
    http_reports: int  # reports posted per ingest measurement
    http_workers: tuple[int, ...]
    memory_checkpoints: tuple[int, ...]  # reports ingested when peak memory is read
    serving_servers: tuple[str, ...]  # server models measured (benchmarks/serving/bench.py)
    serving_seconds: float  # per load run (1, 10, 500 reports per request; no-op and ours)
    slow_seconds: float  # uploads timed while the slow clients attack
    hh_store_reports: int  # the dashboard store whose hh task (a fifth) discovery reads
    serving_pool: int  # privatized reports per batch size the serving load cycles through
    analyst_reports: int  # reports in the sketch the analyst's estimates read while serving
    analyst_candidates: int  # candidates per estimate of that analyst
    hh_repeat: int  # heavy-hitter discoveries timed: the first after the fold, then repeats
    cluster_seconds: float  # per figure of 2 PostgreSQL nodes vs 1 SQLite node (1, 10 reports)


MODES: dict[str, Sizes] = {
    "full": Sizes(
        repeats=7,
        sketch_ks=SKETCH_KS,
        calls=20_000,
        batch=100_000,
        aggregate={2048: 1 << 17, 65_536: 1 << 20},
        baseline_aggregate=20_000,
        estimate_reports=100_000,
        candidates=CANDIDATES,
        baseline_sample={2048: 200, 65_536: 10},
        accuracy_reports=10_000,
        accuracy_target=1000,
        accuracy_trials=40,
        http_reports=100_000,
        http_workers=(1, 2),
        memory_checkpoints=(125_000, 250_000, 500_000, 1_000_000),
        serving_servers=SERVERS,
        serving_seconds=10.0,
        slow_seconds=15.0,
        hh_store_reports=1_000_000,
        serving_pool=100_000,
        analyst_reports=100_000,
        analyst_candidates=CANDIDATES,
        hh_repeat=3,
        cluster_seconds=10.0,
    ),
    "quick": Sizes(
        repeats=3,
        sketch_ks=SKETCH_KS,
        calls=5000,
        batch=20_000,
        aggregate={2048: 1 << 16, 65_536: 1 << 18},
        baseline_aggregate=5000,
        estimate_reports=20_000,
        candidates=CANDIDATES,
        baseline_sample={2048: 50, 65_536: 3},
        accuracy_reports=5000,
        accuracy_target=500,
        accuracy_trials=15,
        http_reports=20_000,
        http_workers=(1, 2),
        memory_checkpoints=(25_000, 50_000, 100_000, 200_000),
        serving_servers=SERVERS,
        serving_seconds=4.0,
        slow_seconds=6.0,
        hh_store_reports=200_000,
        serving_pool=100_000,
        analyst_reports=100_000,
        analyst_candidates=CANDIDATES,
        hh_repeat=3,
        cluster_seconds=4.0,
    ),
    "smoke": Sizes(
        repeats=1,
        sketch_ks=(2048,),
        calls=50,
        batch=200,
        aggregate={2048: 1 << 10},
        baseline_aggregate=100,
        estimate_reports=1000,
        candidates=100,
        baseline_sample={2048: 2},
        accuracy_reports=300,
        accuracy_target=30,
        accuracy_trials=3,
        http_reports=1000,
        http_workers=(1,),
        memory_checkpoints=(500, 1000),
        serving_servers=(DEFAULT_SERVER,),
        serving_seconds=1.0,
        slow_seconds=2.0,
        hh_store_reports=10_000,
        serving_pool=2000,
        analyst_reports=10_000,
        analyst_candidates=100,
        hh_repeat=2,
        cluster_seconds=1.0,
    ),
}
