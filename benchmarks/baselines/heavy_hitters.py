"""Heavy hitters without a dictionary: our `hh` task against pure-ldp's PEM and SFP, one run.

    python -m benchmarks.baselines.heavy_hitters [--devices 20000] [--seed 5]

One population for everyone: Zipf(1.1) over 2,000 random strings of 3–8 letters a–z, one
string per device, ε = 4. Ours: the `hh` task (k = 256, m = 256, 2 letters per level),
every device privatized for real (its level from its own secret) and discovered from the
integer sums. pure-ldp 1.2.0 runs in the benchmark's baseline virtualenv
(bench-results/.baseline-venv, see baseline.py) on the same strings: PEM with its defaults
(OLH per group, 2 letters per step) and with pure-ldp's own CMS (k, m as ours), SFP with
its defaults and with that CMS. Reported: top-10 and top-20 precision (= recall) against
the true ranking, and the wall time of privatizing, aggregating and finding (pure-ldp's
is pure Python per report; ours vectorized), or the error a configuration raises.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.baselines.pure_ldp import (
    RUN_TIMEOUT,
    SINGLE_THREAD,
    baseline_python,
    runner_command,
)
from ldp_telemetry.shared.mechanisms.hh.mechanism import HeavyHitters
from simulations.frequency.heavy_hitters import LETTERS, strings

HERE = Path(__file__).resolve().parent
MAX_LENGTH, VOCABULARY, EPSILON, K, M, TOPS = 8, 2_000, 4.0, 256, 256, (10, 20)


def population(devices: int, rng: np.random.Generator) -> tuple[list[str], list[str]]:
    """Return every device's string (shuffled) and the true ranking."""
    vocabulary = strings(VOCABULARY, MAX_LENGTH, rng)
    weights = np.arange(1, VOCABULARY + 1, dtype=float) ** -1.1
    counts = rng.multinomial(devices, weights / weights.sum())
    ranking = [vocabulary[i] for i in np.argsort(-counts, kind="stable")]
    values = [v for v, c in zip(vocabulary, counts, strict=True) for _ in range(int(c))]
    return [values[i] for i in rng.permutation(len(values))], ranking


def ours(values: list[str], rng: np.random.Generator) -> dict[str, Any]:
    """Privatize every device's value at its own level, sum, discover the top 20."""
    started = time.perf_counter()
    hh = HeavyHitters(
        epsilon=EPSILON,
        k=K,
        m=M,
        hash_seed=int(rng.integers(0, 2**32)),
        alphabet=LETTERS,
        max_length=MAX_LENGTH,
        step=2,
    )
    secrets = [hashlib.sha256(f"device-{i}".encode()).digest() for i in range(len(values))]
    levels = [int(hh.for_device(s).device_level or 0) for s in secrets]
    sums = hh.new_sums()
    sums.add_many(hh.privatize_many(values, rng, levels=levels))
    found = hh.discover(sums, top=max(TOPS), survivors=64)
    return {
        "name": "ldp-telemetry hh (k = m = 256, 2 letters per level)",
        "found": list(found.estimates.values),
        "seconds": time.perf_counter() - started,
    }


def theirs(values: list[str], folder: Path) -> list[dict[str, Any]]:
    """Run pure-ldp's PEM and SFP in the baseline virtualenv on the same values."""
    spec = {
        "values": values,
        "epsilon": EPSILON,
        "alphabet": LETTERS,
        "max_length": MAX_LENGTH,
        "fragment": 2,
        "top": max(TOPS),
        "cms_k": K,
        "cms_m": M,
    }
    (folder / "in.json").write_text(json.dumps(spec), encoding="utf-8")
    python = baseline_python(HERE.parents[1] / "bench-results" / ".baseline-venv")
    subprocess.run(
        runner_command(
            python,
            HERE / "heavy_hitters_runner.py",
            str(folder / "in.json"),
            str(folder / "out.json"),
        ),
        check=True,
        timeout=RUN_TIMEOUT,
        env={"PATH": "/usr/bin:/bin", **SINGLE_THREAD},
    )
    results: list[dict[str, Any]] = json.loads((folder / "out.json").read_text("utf-8"))
    return results


def main() -> None:
    """Run everyone on one population; print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--devices", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    values, ranking = population(args.devices, rng)
    with tempfile.TemporaryDirectory(prefix="ldp-hh-baseline-") as folder:
        rows = [ours(values, rng), *theirs(values, Path(folder))]
    print(
        f"{args.devices:,} devices, ε = {EPSILON:g}, Zipf(1.1) over {VOCABULARY:,} strings of "
        f"3–{MAX_LENGTH} letters (seed {args.seed})\n"
    )
    print("| method | top-10 | top-20 | seconds | note |")
    print("|---|---|---|---|---|")
    for row in rows:
        if "error" in row:
            print(f"| {row['name']} | — | — | {row['seconds']:.1f} | fails: {row['error']} |")
            continue
        found = row["found"]
        scores = [len(set(found[:top]) & set(ranking[:top])) / top for top in TOPS]
        print(f"| {row['name']} | {scores[0]:.2f} | {scores[1]:.2f} | {row['seconds']:.1f} | |")


if __name__ == "__main__":
    main()
