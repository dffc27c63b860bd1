"""What an upload body costs to parse and decode, before and after, in one interleaved run.

    python -m benchmarks.serving.decode [--rounds 15]

Bodies as devices send them (CMS k = m = 1024, each report privatized by the SDK from its
own Zipf-drawn value) of 1, 10 and 500 reports. Per round, each contender decodes each
body for a fixed number of repetitions, in turn, and its CPU time (``time.process_time``,
so other processes on a shared machine count less) is noted; the table gives the median
per body over rounds and the ratio to the first contender:

- ``decode_batch`` (what the collector runs on a parsed body; to compare two versions of
  the code, run this module in both checkouts, alternately);
- the JSON parse of the same body by the standard library (what the collector does),
  orjson and msgspec, when installed (the collector's parser lives in aggregator/body.py).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.common.workload import zipf_values
from ldp_telemetry.shared import Envelope, TaskConfig, decode_batch, encode_batch
from ldp_telemetry.shared.codec import new_report_id

SIZES = (1, 10, 500)
WORK = 20_000  # reports decoded per contender per round


def task() -> TaskConfig:
    """Return the serving benchmark's task (CMS k = m = 1024, ε = 4)."""
    return TaskConfig.from_dict(
        {"task_id": "bench", "mechanism": "cms", "epsilon": 4.0, "k": 1024, "m": 1024}
        | {"hash_seed": 2026}
    )


def body(config: TaskConfig, size: int, rng: np.random.Generator) -> bytes:
    """Return an upload body of ``size`` freshly privatized reports."""
    reports = config.mechanism_object.privatize_many(zipf_values(size, rng), rng)
    now = config.floor_time(time.time())
    return encode_batch(
        config,
        [
            Envelope(new_report_id(), config.fingerprint, now, reports.report(i))
            for i in range(size)
        ],
    )


def parsers() -> dict[str, Callable[[bytes], Any]]:
    """Return the JSON parsers to compare: the standard library's, and any installed."""
    found: dict[str, Callable[[bytes], Any]] = {"json": lambda raw: json.loads(raw.decode())}
    for name, attribute in (("orjson", "loads"), ("msgspec.json", "decode")):
        try:
            found[name] = getattr(importlib.import_module(name), attribute)
        except ImportError:
            continue
    return found


def measure(rounds: int, rng: np.random.Generator) -> dict[int, dict[str, float]]:
    """Return per body size the median CPU µs per body of each contender."""
    config = task()
    out: dict[int, dict[str, float]] = {}
    for size in SIZES:
        raw = body(config, size, rng)
        parsed = json.loads(raw)
        if len(decode_batch(config, parsed)[0]) != size:
            raise AssertionError("a device's report was refused")
        contenders: dict[str, Callable[[], Any]] = {
            "decode_batch": functools.partial(decode_batch, config, parsed),
        }
        for name, parse in parsers().items():
            contenders[f"parse: {name}"] = functools.partial(parse, raw)
        repeat = max(1, WORK // size)
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(rounds):
            for name, run in contenders.items():
                started = time.process_time()
                for _ in range(repeat):
                    run()
                times[name].append((time.process_time() - started) / repeat * 1e6)
        out[size] = {name: statistics.median(spans) for name, spans in times.items()}
    return out


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.serving.decode")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    results = measure(args.rounds, np.random.default_rng(7))
    print(f"load average {os.getloadavg()[0]:.1f}; median CPU µs per body over rounds")
    print("| contender | " + " | ".join(f"{s} report(s)" for s in SIZES) + " |")
    print("|---" * (1 + len(SIZES)) + "|")
    for name in results[SIZES[0]]:
        cells = []
        for size in SIZES:
            mine, base = results[size][name], results[size][_baseline(name)]
            cells.append(f"{mine:,.1f} ({base / mine:.2f}×)")
        print(f"| {name} | " + " | ".join(cells) + " |")


def _baseline(name: str) -> str:
    return "parse: json" if name.startswith("parse") else name


if __name__ == "__main__":
    main()
