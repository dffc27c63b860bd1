"""Measure this project's shared/ hot paths and describe the same work for the baseline.

Each section returns our results (name -> {"seconds": ...} or {"sd": ...}) and the part of
the baseline's spec that repeats the same work on the same files.
"""

from __future__ import annotations

import math
import statistics
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common.settings import (
    ACCURACY_K,
    ACCURACY_M,
    CLIENT_K,
    CLIENT_M,
    EPSILON,
    RR_EPSILON,
    SKETCH_M,
    Sizes,
)
from benchmarks.common.timing import cpu_median
from benchmarks.common.workload import accuracy_values, write_json, write_reports, zipf_values
from ldp_telemetry.shared import CountMeanSketch, HadamardCountMeanSketch, RandomizedResponse
from ldp_telemetry.shared.accuracy import cms_count_variance, hcms_count_variance

Results = dict[str, dict[str, Any]]
Spec = Any  # JSON for the baseline runner
SketchMechanism = CountMeanSketch | HadamardCountMeanSketch
SKETCHES: dict[str, type[SketchMechanism]] = {
    "cms": CountMeanSketch,
    "hcms": HadamardCountMeanSketch,
}


def sketch(mechanism: str, k: int, m: int, seed: int) -> Any:
    """Return a CMS or HCMS mechanism at epsilon = EPSILON.

    Typed Any: both have the same methods, but each sums object takes its own batch type.
    """
    return SKETCHES[mechanism](epsilon=EPSILON, k=k, m=m, hash_seed=seed)


def privatize_each(mechanism: SketchMechanism | RandomizedResponse, values: list[Any]) -> None:
    """Privatize the values one call each, as a device does."""
    for value in values:
        mechanism.privatize(value)


def client(sizes: Sizes, folder: Path, rng: np.random.Generator) -> tuple[Results, Spec]:
    """Time privatize (CSPRNG, one value per call) for CMS, HCMS, RR, and privatize_many."""
    values = zipf_values(sizes.calls, rng)
    results: Results = {}
    for name in SKETCHES:
        mechanism = sketch(name, CLIENT_K, CLIENT_M, 1)
        seconds = cpu_median(partial(privatize_each, mechanism, values), sizes.repeats, warmup=True)
        results[f"{name}_privatize"] = {"seconds": seconds / len(values)}
    cms = sketch("cms", CLIENT_K, CLIENT_M, 1)
    batch = zipf_values(sizes.batch, rng)
    seconds = cpu_median(lambda: cms.privatize_many(batch), sizes.repeats)
    results["cms_privatize_many"] = {"seconds": seconds / len(batch)}
    rr = RandomizedResponse(epsilon=RR_EPSILON)
    answers = [i % 2 == 0 for i in range(sizes.calls)]
    seconds = cpu_median(partial(privatize_each, rr, answers), sizes.repeats)
    results["rr_privatize"] = {"seconds": seconds / len(answers)}
    spec = {
        "values": write_json(folder, "client_values.json", values),
        "epsilon": EPSILON,
        "k": CLIENT_K,
        "m": CLIENT_M,
        "rr_epsilon": RR_EPSILON,
    }
    return results, spec


def aggregate(sizes: Sizes, folder: Path, rng: np.random.Generator) -> tuple[Results, Spec]:
    """Time ``sums.add_many`` on prebuilt batches of decoded CMS and HCMS reports."""
    results: Results = {}
    cases = []
    for name in SKETCHES:
        for k in sizes.sketch_ks:
            mechanism = sketch(name, k, SKETCH_M, 2)
            batch = mechanism.privatize_many(zipf_values(sizes.aggregate[k], rng), rng)
            sums = mechanism.new_sums()
            seconds = cpu_median(partial(sums.add_many, batch), sizes.repeats, warmup=True)
            key = f"{name}_aggregate_k{k}"
            results[key] = {"seconds": seconds / len(batch), "reports": len(batch)}
            head = type(batch)(
                *(array[: sizes.baseline_aggregate] for array in _batch_arrays(batch))
            )
            cases.append(
                {
                    "name": key,
                    "mechanism": name,
                    "epsilon": EPSILON,
                    "k": k,
                    "m": SKETCH_M,
                    "file": write_reports(folder, f"{key}.npz", head),
                }
            )
            del sums, batch
    return results, cases


def estimate(sizes: Sizes, rng: np.random.Generator) -> tuple[Results, Spec]:
    """Time estimates of ``sizes.candidates`` candidates over filled sums."""
    results: Results = {}
    cases = []
    candidates = [f"item-{i}" for i in range(sizes.candidates)]
    for name in SKETCHES:
        for k in sizes.sketch_ks:
            mechanism = sketch(name, k, SKETCH_M, 3)
            sums = mechanism.new_sums()
            sums.add_many(mechanism.privatize_many(zipf_values(sizes.estimate_reports, rng), rng))
            seconds = cpu_median(
                partial(mechanism.estimate, sums, candidates), max(1, sizes.repeats // 2)
            )
            key = f"{name}_estimate_k{k}"
            results[key] = {"seconds": seconds, "candidates": len(candidates)}
            cases.append(
                {
                    "name": key,
                    "mechanism": name,
                    "epsilon": EPSILON,
                    "k": k,
                    "m": SKETCH_M,
                    "candidates": len(candidates),
                    "sample": sizes.baseline_sample[k],
                    "reports": 1000,
                }
            )
            del sums
    return results, cases


def accuracy(sizes: Sizes, folder: Path, seed: int) -> tuple[Results, Spec]:
    """Return the SD over trials of one count's estimate, beside its closed form."""
    rng = np.random.default_rng(seed)
    values = accuracy_values(sizes.accuracy_reports, sizes.accuracy_target, rng)
    name_of_values = write_json(folder, "accuracy_values.json", values)
    results: Results = {}
    cases = []
    for name in SKETCHES:
        mechanism = sketch(name, ACCURACY_K, ACCURACY_M, 4)
        found = []
        for _ in range(sizes.accuracy_trials):
            sums = mechanism.new_sums()
            sums.add_many(mechanism.privatize_many(values, rng))
            found.append(float(mechanism.estimate(sums, ["target"]).estimate[0]))
        variance = (cms_count_variance if name == "cms" else hcms_count_variance)(
            len(values), sizes.accuracy_target, ACCURACY_M, mechanism.flip
        )
        results[f"{name}_accuracy"] = {
            "sd": statistics.stdev(found) if len(found) > 1 else math.nan,
            "mean": statistics.fmean(found),
            "trials": len(found),
            "theory_sd": math.sqrt(float(variance)),
        }
        cases.append(
            {
                "name": f"{name}_accuracy",
                "mechanism": name,
                "epsilon": EPSILON,
                "k": ACCURACY_K,
                "m": ACCURACY_M,
                "values": name_of_values,
                "target": "target",
                "trials": sizes.accuracy_trials,
                "seed": seed,
            }
        )
    return results, cases


def _batch_arrays(batch: Any) -> tuple[np.ndarray, ...]:
    """Return a sketch batch's arrays in constructor order."""
    if hasattr(batch, "cols"):
        return batch.rows, batch.cols, batch.bits
    return batch.rows, batch.bits
