"""The whole system on this machine: collector, tasks, a population of devices, estimates.

Starts ``ldp-aggregator serve`` on a free loopback port with SQLite in a temporary folder,
creates a ``cms`` task (favourite emoji), an ``rr`` task (dark mode yes/no) and an ``hh``
task (words typed, never listed to the collector), records every simulated device's
values through the real client SDK over HTTP, asks for estimates with 95% intervals and
for the most frequent words, prints them beside the truth, then stops the collector.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
from tqdm import tqdm

from demo.gateway import Gateway
from demo.population import VOCABULARY, Population, make_population
from demo.server import Collector, running_collector
from ldp_telemetry.client import Client, ClientStats
from ldp_telemetry.shared import TaskConfig

EMOJI_TASK: dict[str, Any] = {
    "task_id": "favourite-emoji",
    "mechanism": "cms",
    "epsilon": 4.0,
    "k": 1024,
    "m": 1024,
}
DARK_MODE_TASK: dict[str, Any] = {"task_id": "dark-mode", "mechanism": "rr", "epsilon": math.log(3)}
WORDS_TASK: dict[str, Any] = {
    "task_id": "words-typed",
    "mechanism": "hh",
    "epsilon": 4.0,
    "k": 1024,
    "m": 1024,
    "alphabet": "abcdefghijklmnopqrstuvwxyz",
    "max_length": 8,
}
TASKS = (EMOJI_TASK, DARK_MODE_TASK, WORDS_TASK)


@dataclass(frozen=True)
class DemoResult:
    """What one run produced: the population, delivery counts and the two answers."""

    population: Population
    stats: ClientStats
    accepted: int
    rejected: dict[str, int]
    emoji: dict[str, Any]
    dark_mode: dict[str, Any]
    words: dict[str, Any]

    @property
    def delivered(self) -> bool:
        """Return whether every device's report was uploaded and counted once."""
        expected = len(TASKS) * len(self.population.emoji)
        return (
            self.stats.dropped_total == 0
            and not self.rejected
            and self.accepted == expected
            and self.stats.sent == expected
        )


def run_demo(devices: int, *, seed: int, progress: bool = False) -> DemoResult:
    """Start a collector, create the tasks, record the population, return the estimates."""
    population = make_population(devices, seed=seed)
    with (
        tempfile.TemporaryDirectory(prefix="ldp-demo-") as folder,
        running_collector(Path(folder)) as collector,
    ):
        print(f"collector running at {collector.url} (SQLite in {folder})")
        for task in TASKS:
            created = collector.post("/v1/tasks", task, collector.admin_token)
            print(
                f"created task {created['task_id']!r}: {created['mechanism']}, "
                f"epsilon {created['effective_epsilon']:.6f} (effective)"
            )
        stats, gateway = record_population(collector, population, progress=progress)
        emoji = collector.post(
            f"/v1/tasks/{EMOJI_TASK['task_id']}/estimates",
            {"candidates": list(VOCABULARY)},
            collector.analyst_token,
        )
        dark = collector.post(
            f"/v1/tasks/{DARK_MODE_TASK['task_id']}/estimates", {}, collector.analyst_token
        )
        words = collector.post(
            f"/v1/tasks/{WORDS_TASK['task_id']}/heavy-hitters", {"top": 10}, collector.analyst_token
        )
    return DemoResult(
        population, stats, gateway.accepted, dict(gateway.rejected), emoji, dark, words
    )


def main(argv: list[str] | None = None) -> int:
    """Run the demo and print the estimates beside the truth; 0 if every report arrived."""
    args = _parser().parse_args(argv)
    started = time.monotonic()
    result = run_demo(args.devices, seed=args.seed, progress=not args.no_progress)
    print(
        f"devices' SDKs: {result.stats.sent} reports uploaded, "
        f"{result.stats.dropped_total} dropped, {result.stats.retries} retries; "
        f"collector accepted {result.accepted}, rejected {result.rejected or 0}"
    )
    print_emoji(result.emoji, result.population, args.top)
    print_dark_mode(result.dark_mode, result.population)
    print_words(result.words, result.population)
    print(f"\ndone in {time.monotonic() - started:.1f} s; the collector was stopped.")
    return 0 if result.delivered else 1


def record_population(
    collector: Collector, population: Population, *, progress: bool
) -> tuple[ClientStats, Gateway]:
    """Record each device's values with its own SDK client; return the summed stats.

    Every device is a separate :class:`client.Client` (own secret, budget, memo) with the
    tasks' public configurations pinned, as an app ships them or fetches them once.
    """
    tasks = [
        TaskConfig.from_dict(
            requests.get(f"{collector.url}/v1/tasks/{task['task_id']}", timeout=10).json()
        )
        for task in TASKS
    ]
    gateway, totals = Gateway(collector.url), Counter[str]()
    devices = zip(population.emoji, population.dark_mode, population.words, strict=True)
    for emoji, dark, word in tqdm(
        devices, total=len(population.emoji), desc="devices", unit="dev", disable=not progress
    ):
        device = Client(collector.url, tasks=tasks, transport=gateway, atexit_timeout=None)
        device.record(EMOJI_TASK["task_id"], emoji)
        device.record(DARK_MODE_TASK["task_id"], dark)
        device.record(WORDS_TASK["task_id"], word)
        device.close(timeout=10)
        stats = device.stats()
        totals.update(sent=stats.sent, dropped=stats.dropped_total, retries=stats.retries)
    gateway.drain()
    gateway.shutdown()
    summary = ClientStats(
        sent=totals["sent"],
        retries=totals["retries"],
        dropped={"any": totals["dropped"]} if totals["dropped"] else {},
    )
    return summary, gateway


def print_emoji(answer: dict[str, Any], population: Population, top: int) -> None:
    """Print the top estimates beside the truth, and how many intervals cover it."""
    truth = population.emoji_counts()
    rows = sorted(answer["estimates"], key=lambda row: -row["estimate"])
    print(
        f"\nfavourite emoji (cms, n={answer['n']}, epsilon={answer['effective_epsilon']:.3f}, "
        f"{answer['level']:.0%} intervals)"
    )
    print(f"{'emoji':<6}{'true':>8}{'estimate':>10}{'std err':>9}   interval")
    for row in rows[:top]:
        print(
            f"{row['value']:<6}{truth[row['value']]:>8}{row['estimate']:>10.0f}"
            f"{row['std_error']:>9.0f}   [{row['ci_low']:.0f}, {row['ci_high']:.0f}]"
        )
    inside = sum(row["ci_low"] <= truth[row["value"]] <= row["ci_high"] for row in rows)
    print(
        f"{inside} of {len(rows)} intervals contain the true count "
        f"(about {answer['level']:.0%} are expected to)"
    )


def print_dark_mode(answer: dict[str, Any], population: Population) -> None:
    """Print the estimated share of yes beside the truth."""
    n, yes = answer["n"], answer["estimates"][0]
    true_share = population.dark_mode_count() / len(population.dark_mode)
    low, high = yes["ci_low"] / n, yes["ci_high"] / n
    print(
        f"\ndark mode (rr, n={n}, epsilon={answer['effective_epsilon']:.4f}): "
        f"estimated {yes['estimate'] / n:.2%} yes, {answer['level']:.0%} interval "
        f"[{low:.2%}, {high:.2%}]; true share {true_share:.2%}"
    )


def print_words(answer: dict[str, Any], population: Population) -> None:
    """Print the discovered words beside their true counts and the true top 10."""
    truth = population.word_counts()
    true_top = [word for word, _ in truth.most_common(len(answer["heavy_hitters"]))]
    print(
        f"\nwords typed, discovered without a list (hh, n={answer['n']}, "
        f"epsilon={answer['effective_epsilon']:.3f}; candidates examined per level: "
        f"{', '.join(map(str, answer['examined']))})"
    )
    print(f"{'found':<10}{'estimate':>9}{'true':>8}  reliable  true rank")
    for row in answer["heavy_hitters"]:
        rank = true_top.index(row["value"]) + 1 if row["value"] in true_top else "-"
        print(
            f"{row['value']:<10}{row['estimate']:>9.0f}{truth[row['value']]:>8}  "
            f"{'yes' if row['reliable'] else 'no':<8}  {rank}"
        )
    hits = sum(row["value"] in true_top for row in answer["heavy_hitters"])
    print(f"{hits} of the true top {len(true_top)} found")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m demo", description=__doc__)
    parser.add_argument(
        "--devices", type=int, default=100_000, help="simulated devices (default: %(default)s)"
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=2017,
        help="seed of the population (the privacy noise is always the "
        "OS CSPRNG; default: %(default)s)",
    )
    parser.add_argument("--top", type=int, default=10, help="estimates to print")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return parser


if __name__ == "__main__":
    sys.exit(main())
