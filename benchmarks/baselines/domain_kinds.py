"""Measure oue and ss (privatize and aggregation) and describe the same work for pure-ldp's OUE.

A mid-size question: d = DOMAIN_D values at ε = EPSILON, the values drawn Zipf-like over
the domain. pure-ldp has OUE (``UEClient``/``UEServer`` with ``use_oue=True``) but no
subset selection, so ss's rows have no baseline.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.baselines.ours import Results, Spec, privatize_each
from benchmarks.common.settings import DOMAIN_D, EPSILON, Sizes
from benchmarks.common.timing import cpu_median
from benchmarks.common.workload import write_json
from ldp_telemetry.shared import TaskConfig

KINDS = ("oue", "ss")
DOMAIN = [f"value-{i}" for i in range(DOMAIN_D)]


def mechanism(kind: str) -> Any:
    """Return the oue or ss mechanism over DOMAIN at EPSILON (through the registry)."""
    return TaskConfig(
        task_id="bench", mechanism=kind, epsilon=EPSILON, domain=DOMAIN
    ).mechanism_object


def domain_indices(count: int, rng: np.random.Generator) -> np.ndarray:
    """Return ``count`` domain indices with a Zipf(1.3) popularity."""
    return (rng.zipf(1.3, count) - 1) % DOMAIN_D


def client(sizes: Sizes, folder: Path, rng: np.random.Generator) -> tuple[Results, Spec]:
    """Time privatize (CSPRNG, one value per call) and privatize_many of oue and ss."""
    indices = domain_indices(sizes.calls, rng)
    values = [DOMAIN[i] for i in indices]
    batch = [DOMAIN[i] for i in domain_indices(sizes.batch, rng)]
    results: Results = {}
    for kind in KINDS:
        mech = mechanism(kind)
        seconds = cpu_median(partial(privatize_each, mech, values), sizes.repeats, warmup=True)
        results[f"{kind}_privatize"] = {"seconds": seconds / len(values)}
        seconds = cpu_median(partial(mech.privatize_many, batch), sizes.repeats)
        results[f"{kind}_privatize_many"] = {"seconds": seconds / len(batch)}
    spec = {
        "indices": write_json(folder, "domain_indices.json", [int(i) for i in indices]),
        "epsilon": EPSILON,
        "d": DOMAIN_D,
    }
    return results, spec


def aggregate(sizes: Sizes, folder: Path, rng: np.random.Generator) -> tuple[Results, Spec]:
    """Time ``sums.add_many`` on prebuilt batches of decoded oue and ss reports."""
    results: Results = {}
    cases = []
    count = next(iter(sizes.aggregate.values()))
    for kind in KINDS:
        mech = mechanism(kind)
        batch = mech.privatize_many([DOMAIN[i] for i in domain_indices(count, rng)], rng)
        sums = mech.new_sums()
        seconds = cpu_median(partial(sums.add_many, batch), sizes.repeats, warmup=True)
        key = f"{kind}_aggregate"
        results[key] = {"seconds": seconds / len(batch), "reports": len(batch)}
        if kind == "oue":
            np.savez(folder / f"{key}.npz", bits=batch[: sizes.baseline_aggregate])
            cases.append({"name": key, "epsilon": EPSILON, "d": DOMAIN_D, "file": f"{key}.npz"})
    return results, cases
