"""Where a grouped numeric answer's rows spend their CPU: the split by part (issue 38).

    python -m benchmarks.store.row_split [--rows 20] [--reports-per-slice 2000]

The 20 rows of the breakdown ``grouped_estimates`` answers (the same task: ε = 2 over
[0, 100], 256 buckets; its reports drawn the same way), answered as a breakdown's rows
(``SquareWave.estimate_rows``), each part's CPU measured by wrapping the function that does
it (``time.process_time``; a wrapper's own cost, a few µs per call, lands in its part).
Inclusive: each row's own λ search, the searches of its refits' centre (the fit of the draws'
expected counts), the 40 bootstrap refits' and the piled alternatives' searches side by side
(``held.refit``), the EMS screen. Exclusive, inside those refit searches: the jacobian, the
Gram products, the fits' evaluation, the line search's rest, the penalized likelihoods, the
linear algebra, and the Newton loop's own array operations. What is left is the statistics
of every fit, the shape moves and the flags.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.store.grouped_estimates import DIMENSIONS, TASKS, device_values
from ldp_telemetry.shared import TaskConfig
from ldp_telemetry.shared.mechanisms.numeric import estimate, held, pspline, refits


class Split:
    """CPU seconds per part: inclusive, and exclusive of the parts timed inside it."""

    def __init__(self) -> None:
        self.inclusive: dict[str, float] = defaultdict(float)
        self.exclusive: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.stack: list[str] = []

    def wrap(self, owner: Any, name: str, label: Callable[..., str] | str) -> None:
        """Time ``owner.name`` from now on under ``label`` (or ``label(*args)``), if it exists
        (an older ``held`` has fewer parts)."""
        inner = getattr(owner, name, None)
        if inner is None:
            return

        def timed(*args: Any, **kwargs: Any) -> Any:
            part = label if isinstance(label, str) else label(*args)
            self.stack.append(part)
            start = time.process_time()
            try:
                return inner(*args, **kwargs)
            finally:
                spent = time.process_time() - start
                self.stack.pop()
                self.inclusive[part] += spent
                self.exclusive[part] += spent
                self.calls[part] += 1
                if self.stack:
                    self.exclusive[self.stack[-1]] -= spent

        setattr(owner, name, timed)


def measure(rows: int, per_slice: int) -> tuple[float, Split]:
    """Return the CPU of answering ``rows`` rows of ``per_slice`` reports and its split."""
    task = TaskConfig(task_id="split", dimensions=DIMENSIONS, **TASKS["numeric"])
    mechanism: Any = task.mechanism_object
    rng = np.random.default_rng([38, list(TASKS).index("numeric")])
    many = []
    for _ in range(rows):
        sums = mechanism.new_sums()
        sums.add_many(mechanism.privatize_many(device_values("numeric", per_slice, rng), rng))
        many.append(sums)
    estimate.spline_peak(mechanism.channel)  # cached once per channel
    split = Split()
    split.wrap(
        pspline,
        "search",
        lambda *_: (
            "searches: the centre of a row's draws"
            if "refit" in split.stack
            else "searches: a row's own"
        ),
    )
    split.wrap(refits, "refit", "refit")
    split.wrap(
        held,
        "refit",
        lambda _c, _s, draws: f"refit searches: {'bootstrap' if len(draws) == 40 else 'piled'}",
    )
    split.wrap(estimate.yardstick, "ems", "EMS screen")
    for name, part in (
        ("converge", "Newton loop's own array operations"),
        ("_jacobian", "jacobian"),
        ("_gram", "Gram products"),
        ("_centred", "Gram products"),
        ("_evaluate", "fits' evaluation"),
        ("_climb", "line search's rest"),
        ("_penalized", "penalized likelihoods"),
        ("_convex", "linear algebra (solve, Cholesky, eigenvalues, inverse)"),
    ):
        split.wrap(held, name, part)
    for name in ("solve", "eigvalsh", "cholesky", "inv"):
        split.wrap(
            np.linalg,
            name,
            lambda *_: (
                "linear algebra (solve, Cholesky, eigenvalues, inverse)"
                if any(part.startswith("refit searches") for part in split.stack)
                else "outside"
            ),
        )
    start = time.process_time()
    mechanism.estimate_rows(many)
    return time.process_time() - start, split


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.store.row_split")
    parser.add_argument("--rows", type=int, default=20)
    parser.add_argument("--reports-per-slice", type=int, default=2_000)
    args = parser.parse_args(argv)
    total, split = measure(args.rows, args.reports_per_slice)
    print(f"{args.rows} rows of {args.reports_per_slice:,} reports: {total:.2f} s CPU\n")
    print("| part | s CPU | share |\n|:---|---:|---:|")
    inclusive = [p for p in split.inclusive if p.startswith(("searches", "refit ", "EMS"))]
    for part in sorted(inclusive, key=lambda p: -split.inclusive[p]):
        print(f"| {part} | {split.inclusive[part]:.2f} | {split.inclusive[part] / total:.0%} |")
    rest = total - sum(split.inclusive[p] for p in inclusive)
    print(f"| the rest: statistics of every fit, flags | {rest:.2f} | {rest / total:.0%} |")
    print("\nInside the refit searches (bootstrap and piled together), exclusive:\n")
    print("| part | s CPU | share of all |\n|:---|---:|---:|")
    inner = [p for p in split.exclusive if p not in inclusive and p not in ("refit", "outside")]
    for part in sorted(inner, key=lambda p: -split.exclusive[p]):
        print(f"| {part} | {split.exclusive[part]:.2f} | {split.exclusive[part] / total:.0%} |")


if __name__ == "__main__":
    main()
