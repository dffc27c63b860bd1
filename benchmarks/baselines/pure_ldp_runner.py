"""Measure the pure-ldp baseline; runs inside the baseline's own virtualenv.

Started by ``benchmarks.baselines.pure_ldp`` as ``<baseline python> pure_ldp_runner.py``; it
reads one JSON spec per line on stdin and answers each with one JSON line on stdout, so the main
script can interleave its own measurements with the baseline's (fair under changing machine load).
It imports nothing from this project (the baseline needs numpy < 2), so the workload comes
as files written by the main script: the same values,
the same privatized reports (converted here, untimed, to pure-ldp's report format) and the
same parameters. Every time is CPU time of this process, the median over ``repeats``.

pure-ldp's API (1.2.0): ``CMSServer(epsilon, k, m, is_hadamard)`` draws its k hash
functions; ``CMSClient(epsilon, server.get_hash_funcs(), m, is_hadamard)``; a CMS report is
``(vector of ±1, row)`` and an HCMS report ``(±1, row, column)``; ``server.aggregate(report)``
adds one report and ``server.estimate(value)`` loops over the k rows in Python.
Binary randomized response is ``DEClient(epsilon, d=2)`` (direct encoding) on items 1, 2.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from functools import partial
from importlib import metadata
from typing import Any

import numpy as np
from pure_ldp.frequency_oracles.apple_cms import CMSClient, CMSServer
from pure_ldp.frequency_oracles.direct_encoding import DEClient
from pure_ldp.frequency_oracles.unary_encoding import UEClient, UEServer

Result = dict[str, Any]


def cpu_median(action: Callable[[], Any], repeats: int) -> float:
    """Return the median CPU seconds of ``action`` over ``repeats`` runs."""
    times = []
    for _ in range(repeats):
        started = time.process_time()
        action()
        times.append(time.process_time() - started)
    return statistics.median(times)


def privatise_each(client: Any, values: list[Any]) -> None:
    """Privatise the values one call each, as a device does."""
    for value in values:
        client.privatise(value)


def load_values(spec: dict[str, Any], name: str) -> list[str]:
    with open(os.path.join(spec["workdir"], name), encoding="utf-8") as handle:
        return json.load(handle)


def sketch_pair(mechanism: str, epsilon: float, k: int, m: int) -> tuple[CMSClient, CMSServer]:
    hadamard = mechanism == "hcms"
    server = CMSServer(epsilon, k, m, is_hadamard=hadamard)
    return CMSClient(epsilon, server.get_hash_funcs(), m, is_hadamard=hadamard), server


def client_results(spec: dict[str, Any]) -> dict[str, Result]:
    """Time one privatise call per value for CMS, HCMS and binary RR."""
    params, repeats = spec["client"], spec["repeats"]
    values = load_values(spec, params["values"])
    results = {}
    for mechanism in ("cms", "hcms"):
        client, _ = sketch_pair(mechanism, params["epsilon"], params["k"], params["m"])
        seconds = cpu_median(partial(privatise_each, client, values), repeats)
        results[f"{mechanism}_privatize"] = {"seconds": seconds / len(values)}
    rr = DEClient(params["rr_epsilon"], 2)
    items = [1 + (i % 2) for i in range(len(values))]
    seconds = cpu_median(partial(privatise_each, rr, items), repeats)
    results["rr_privatize"] = {"seconds": seconds / len(items)}
    return results


def decoded_reports(case: dict[str, Any], spec: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Convert the main script's reports to pure-ldp's decoded report tuples."""
    data = np.load(os.path.join(spec["workdir"], case["file"]))
    rows = data["rows"].tolist()
    if case["mechanism"] == "cms":
        vectors = np.unpackbits(data["bits"], axis=1, count=case["m"]).astype(np.int64) * 2 - 1
        return list(zip(vectors, rows, strict=True))
    signs = (data["bits"].astype(np.int64) * 2 - 1).tolist()
    return list(zip(signs, rows, data["cols"].tolist(), strict=True))


def aggregate_results(spec: dict[str, Any]) -> dict[str, Result]:
    """Time ``server.aggregate`` per report on the same decoded reports as ours."""
    results = {}
    for case in spec["aggregate"]:
        reports = decoded_reports(case, spec)
        _, server = sketch_pair(case["mechanism"], case["epsilon"], case["k"], case["m"])
        seconds = cpu_median(partial(server.aggregate_all, reports), spec["repeats"])
        results[case["name"]] = {"seconds": seconds / len(reports), "reports": len(reports)}
        del server, reports
    return results


def estimate_results(spec: dict[str, Any]) -> dict[str, Result]:
    """Time estimates of ``sample`` candidates and scale to ``candidates`` (linear in them)."""
    results = {}
    for case in spec["estimate"]:
        client, server = sketch_pair(case["mechanism"], case["epsilon"], case["k"], case["m"])
        for i in range(case["reports"]):
            server.aggregate(client.privatise(f"item-{i % 100}"))
        sample = [f"item-{i}" for i in range(case["sample"])]
        prepare = cpu_median(server.check_and_update_estimates, 1)  # HCMS: dense transform
        seconds = cpu_median(
            partial(server.estimate_all, sample, suppress_warnings=True), spec["repeats"]
        )
        results[case["name"]] = {
            "seconds": prepare + seconds * case["candidates"] / len(sample),
            "note": f"extrapolated from {len(sample)} candidates",
        }
        del client, server
    return results


def accuracy_results(spec: dict[str, Any]) -> dict[str, Result]:
    """Return the SD over trials of the estimated count of the workload's target value."""
    results = {}
    for case in spec["accuracy"]:
        values = load_values(spec, case["values"])
        random.seed(case["seed"])
        np.random.seed(case["seed"] % 2**32)
        client, server = sketch_pair(case["mechanism"], case["epsilon"], case["k"], case["m"])
        found = []
        for _ in range(case["trials"]):
            server.reset()
            for value in values:
                server.aggregate(client.privatise(value))
            found.append(server.estimate(case["target"], suppress_warnings=True))
        results[case["name"]] = {
            "sd": statistics.stdev(found),
            "mean": statistics.fmean(found),
            "trials": len(found),
        }
    return results


def domain_client_results(spec: dict[str, Any]) -> dict[str, Result]:
    """Time one OUE privatise call per value (pure-ldp's items are 1 … d)."""
    params = spec["domain_client"]
    items = [1 + int(i) for i in load_values(spec, params["indices"])]
    client = UEClient(params["epsilon"], params["d"], use_oue=True)
    seconds = cpu_median(partial(privatise_each, client, items), spec["repeats"])
    return {"oue_privatize": {"seconds": seconds / len(items)}}


def domain_aggregate_results(spec: dict[str, Any]) -> dict[str, Result]:
    """Time OUE ``server.aggregate`` per report on the same reports as ours (0/1 vectors)."""
    results = {}
    for case in spec["domain_aggregate"]:
        data = np.load(os.path.join(spec["workdir"], case["file"]))
        reports = list(np.unpackbits(data["bits"], axis=1, count=case["d"]).astype(np.int64))
        server = UEServer(case["epsilon"], case["d"], use_oue=True)
        seconds = cpu_median(partial(server.aggregate_all, reports), spec["repeats"])
        results[case["name"]] = {"seconds": seconds / len(reports), "reports": len(reports)}
    return results


SECTIONS = {
    "client": client_results,
    "domain_client": domain_client_results,
    "aggregate": aggregate_results,
    "domain_aggregate": domain_aggregate_results,
    "estimate": estimate_results,
    "accuracy": accuracy_results,
}


def run_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """Run the sections a spec asks for; a failing section is reported, not raised."""
    output: dict[str, Any] = {"version": metadata.version("pure-ldp"), "results": {}, "errors": {}}
    for section, run in SECTIONS.items():
        if not spec.get(section):
            continue
        try:
            output["results"].update(run(spec))
        except Exception as error:  # report and go on: one section must not hide the rest
            output["errors"][section] = f"{type(error).__name__}: {error}"
    return output


def main() -> None:
    """Answer one spec per stdin line with one JSON line (the main script's session)."""
    warnings.simplefilter("ignore")
    for line in sys.stdin:
        answer = run_spec(json.loads(line))
        sys.stdout.write(json.dumps(answer, default=float) + "\n")  # default: numpy scalars
        sys.stdout.flush()


if __name__ == "__main__":
    main()
