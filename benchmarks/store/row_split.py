"""Where a grouped numeric answer's rows spend their CPU: the split by part (issue 38).

    python -m benchmarks.store.row_split [--rows 20] [--reports-per-slice 2000]
    python -m benchmarks.store.row_split --against OLD_HELD.py [--repeats 3]

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

``--against``: instead, the rows' CPU with another version of ``numeric/held.py`` (a file, e.g.
``git show db766cf:shared/ldp_telemetry/shared/mechanisms/numeric/held.py``) against this one,
alternating in one process (the median of ``--repeats`` each), and whether their answers agree.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
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


def breakdown(rows: int, per_slice: int) -> tuple[Any, list[Any]]:
    """Return the benchmark's numeric mechanism and ``rows`` rows' sums of ``per_slice``."""
    task = TaskConfig(task_id="split", dimensions=DIMENSIONS, **TASKS["numeric"])
    mechanism: Any = task.mechanism_object
    rng = np.random.default_rng([38, list(TASKS).index("numeric")])
    many = []
    for _ in range(rows):
        sums = mechanism.new_sums()
        sums.add_many(mechanism.privatize_many(device_values("numeric", per_slice, rng), rng))
        many.append(sums)
    estimate.spline_peak(mechanism.channel)  # cached once per channel
    return mechanism, many


def against(path: str, rows: int, per_slice: int, repeats: int) -> None:
    """Print the rows' CPU with the ``held`` module in ``path`` and with this one."""
    spec = importlib.util.spec_from_file_location("held_against", path)
    assert spec is not None and spec.loader is not None
    other = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(other)
    mechanism, many = breakdown(rows, per_slice)
    seconds: dict[str, list[float]] = {"that": [], "this": []}
    answers: dict[str, list[Any]] = {}
    for _ in range(repeats):
        for name, module in (("that", other), ("this", held)):
            refits.held = module
            start = time.process_time()
            answers[name] = [answer.rows() for answer in mechanism.estimate_rows(many)]
            seconds[name].append(time.process_time() - start)
    refits.held = held
    that, this = (statistics.median(seconds[name]) for name in ("that", "this"))
    worst, flags = 0.0, 0
    for a, b in zip(answers["that"], answers["this"], strict=True):
        for x, y in zip(a, b, strict=True):
            flags += (x["reliable"], x.get("reason")) != (y["reliable"], y.get("reason"))
            for key in ("estimate", "std_error", "ci_low", "ci_high"):
                worst = max(worst, abs(x[key] - y[key]) / max(abs(x[key]), abs(y[key]), 1e-300))
    print(f"{rows} rows of {per_slice:,} reports, median of {repeats}, alternating:")
    print(f"{path}: {that:.2f} s CPU; this held.py: {this:.2f} s CPU ({this / that:.2f}x)")
    print(f"answers: largest relative difference {worst:.2g}, flags or reasons differing {flags}")


def measure(rows: int, per_slice: int) -> tuple[float, Split]:
    """Return the CPU of answering ``rows`` rows of ``per_slice`` reports and its split."""
    mechanism, many = breakdown(rows, per_slice)
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
    parser.add_argument("--against", help="another version of numeric/held.py, a file")
    parser.add_argument("--repeats", type=int, default=3, help="with --against")
    args = parser.parse_args(argv)
    if args.against:
        against(args.against, args.rows, args.reports_per_slice, args.repeats)
        return
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
