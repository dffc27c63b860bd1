"""Level-by-level discovery of frequent strings over the hh sums (pure numpy, no IO).

Level 0: estimate every item of length L0 (and every shorter string + END); keep the
``survivors`` of highest lower bound (estimate − z·SE, z Bonferroni-corrected over the
level's candidates). Level g: a surviving open prefix p is extended by every w of Σ^d
(d = ℓ_g − ℓ_{g−1}) and every shorter w + END; an ended string (it holds END) is carried
as it is, since its devices at level g report it too. Each level's candidates are hashed
and gathered in chunks of ``CHUNK`` with a running top-``survivors``, so memory is bounded
by the chunk and the sketch's row blocks whatever n is; the number of candidates per level
is bounded by ``MAX_LEVEL_CANDIDATES`` (``bytes`` at s = 2 fits only 17 survivors, so a new
task's step defaults to 1 when 2 would not fit ``DEFAULT_SURVIVORS``).

A level's count f̂_g estimates the devices of level g only (about n/G of them), so a
string's count is G·f̂_g with variance G²·Var_g (CMS noise and collisions at n_g reports)
plus G(G−1)·f̂_g, the spread of how many of its devices fell in level g.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from ldp_telemetry.shared.accuracy import sketch_collision_variance
from ldp_telemetry.shared.answers import HeavyHitterRow
from ldp_telemetry.shared.errors import ParameterError
from ldp_telemetry.shared.estimates import DEFAULT_LEVEL, Estimates, z_value
from ldp_telemetry.shared.mechanisms.hh.collisions import disentangle
from ldp_telemetry.shared.mechanisms.sketches.cms import CountMeanSketch
from ldp_telemetry.shared.mechanisms.sketches.row_totals import RowTotals

MAX_LEVEL_CANDIDATES = 1 << 20  # per level: about 2 s of gathering at k = 2048
CHUNK = 1 << 16  # candidates hashed and gathered at once
DEFAULT_SURVIVORS = 64  # what a query keeps per level unless it asks otherwise


@dataclass(frozen=True)
class Discovery:
    """Discovered strings, ranked by lower bound, with the search's bookkeeping.

    The rank key is estimate − reliable_z·std_error (a one-sided lower confidence bound at
    the family-wise level), so every ``reliable`` row comes before every other, and a
    noisy long string never outranks a string whose count is known better.
    """

    estimates: Estimates
    reliable: np.ndarray  # estimate ≥ z·SE, z Bonferroni-corrected over the last level
    examined: tuple[int, ...]  # candidates estimated per level
    reliable_z: float
    levels: int

    def rows(self) -> list[HeavyHitterRow]:
        """Return one JSON-ready dict per string."""
        return [
            {
                "value": row["value"],
                "estimate": row["estimate"],
                "std_error": row["std_error"],
                "ci_low": row["ci_low"],
                "ci_high": row["ci_high"],
                "reliable": bool(flag),
            }
            for row, flag in zip(self.estimates.rows(), self.reliable, strict=True)
        ]


class LevelSearch:
    """Estimates of items (bytes) at each level of one hh task's sums."""

    def __init__(
        self,
        sketches: Sequence[CountMeanSketch],
        lengths: Sequence[int],
        symbols: Sequence[bytes],
        end: bytes,
        sums: Any,
        totals: RowTotals | None = None,
    ) -> None:
        self.sketches, self.lengths, self.symbols, self.end = sketches, lengths, symbols, end
        self.sums, self.levels = sums, len(sketches)
        self.totals = totals if totals is not None else RowTotals()  # levels read whole
        self.k, self.m = sketches[0].k, sketches[0].m
        self._n: dict[int, float] = {}

    @staticmethod
    def check_bounds(symbols: int, lengths: Sequence[int], survivors: int) -> None:
        """Raise ParameterError if some level would examine too many candidates.

        The message names the most survivors (and so the largest top) that would fit.
        """
        first = _words_up_to(symbols, lengths[0])
        widest = max((b - a for a, b in itertools.pairwise(lengths)), default=0)
        per_survivor = _words_up_to(symbols, widest) if widest else 0
        largest = max(first, survivors * per_survivor)
        if largest <= MAX_LEVEL_CANDIDATES:
            return
        fit = MAX_LEVEL_CANDIDATES // per_survivor if per_survivor else 0
        fix = (
            f"ask for at most {fit} survivors (and top), or "
            if first <= MAX_LEVEL_CANDIDATES and fit >= 1
            else ""
        )
        raise ParameterError(
            f"this search would examine {largest:,} candidates at one level (at most "
            f"{MAX_LEVEL_CANDIDATES:,}): {fix}use a task with a smaller alphabet, first or step"
        )

    @staticmethod
    def default_step(symbols: int) -> int:
        """Return the step of a new task: 2, unless the default search would then not fit."""
        fits = DEFAULT_SURVIVORS * _words_up_to(symbols, 2) <= MAX_LEVEL_CANDIDATES
        return 2 if fits else 1

    def level_n(self, g: int) -> float:
        """Return level g's report count: exact from per-row n, else estimated.

        Streamed sums carry only the total. Every CMS report holds (1−q) + (m−1)q ones on
        average, so the level's ones over that is unbiased with an error of about
        sqrt(n_g·m·q)/(m·q) reports, far below the n/G guess's sqrt(n/G).
        """
        if g not in self._n:
            rows = slice(g * self.k, (g + 1) * self.k)
            n = getattr(self.sums, "n", None)
            if isinstance(n, np.ndarray) and n.shape == (self.levels * self.k,):
                self._n[g] = float(n[rows].sum())
            else:
                sketch = self.sketches[g]
                ones = self.totals.total(self.sums, [(rows.start, rows.stop)])
                per_report = (1 - sketch.flip) + (self.m - 1) * sketch.flip
                self._n[g] = ones / per_report
        return self._n[g]

    def level_counts(self, g: int, items: Sequence[bytes]) -> np.ndarray:
        """Return f̂_g of each item: its count among level g's devices."""
        sketch, offset = self.sketches[g], g * self.k
        keys = sketch.keys([item.decode("latin-1") for item in items])
        read, done = self.totals.reader(self.sums, offset)
        gathered = sketch.gather(keys, read)
        done()  # the level's total, for the sums checks (row_totals)
        return np.asarray(sketch.debias(gathered, round(self.level_n(g))), dtype=float)

    def final(
        self,
        strings: Sequence[Sequence[bytes]],
        values: Sequence[Any],
        level: float = DEFAULT_LEVEL,
        found_z: float | None = None,
    ) -> Estimates:
        """Return whole-population estimates of full strings (each a tuple of symbols).

        A string s is whole at every level h with ℓ_h > |s| (its devices there report s + END) and,
        when |s| = L, at the last level: H(s) holds those levels. Its count is (G/|H|)·Σ_{h∈H} f̂_h,
        with variance (G/|H|)²·Σ Var_h (noise and collisions at n_h reports) plus f·(G/|H| − 1), the
        spread of how many of its devices fell in H. A short string is thus estimated from most
        devices, a long one from 1/G of them. ``found_z`` (a discovery's strings and reliable z): at
        each level the strings' items, whole or prefixes, are estimated together, the collisions of
        those found (≥ found_z SE) taken out of every other
        (:mod:`ldp_telemetry.shared.mechanisms.hh.collisions`) instead of counted as noise.
        """
        big_g, last = self.levels, self.lengths[-1]
        total = np.zeros(len(strings))
        variance = np.zeros(len(strings))
        used = np.zeros(len(strings))
        for h, length in enumerate(self.lengths):
            whole = [
                i
                for i, s in enumerate(strings)
                if len(s) < length or (h == big_g - 1 and len(s) == last)
            ]
            if not whole:
                continue
            if found_z is not None:
                counts, level_variance = self.joint_counts(h, strings, whole, found_z)
            else:
                counts, level_variance = self.whole_counts(h, [strings[i] for i in whole])
            total[whole] += counts
            variance[whole] += level_variance
            used[whole] += 1
        scale = big_g / np.maximum(used, 1)
        estimate = scale * total
        variance = scale**2 * variance + np.maximum(estimate, 0) * (scale - 1)
        return Estimates.from_variance(values, estimate, variance, int(self.sums.total), level)

    def whole_counts(
        self, h: int, strings: Sequence[Sequence[bytes]]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Return f̂_h of strings whole at level h and its variance: noise and collisions."""
        counts = self.chunked_counts(h, [self.item_of(s, h) for s in strings])
        sketch, n_h = self.sketches[h], self.level_n(h)
        noise = sketch.noise_variance(round(n_h), np.clip(counts, 0, n_h))
        pairs = counts * counts - counts - noise
        return counts, noise + sketch_collision_variance(pairs, self.k, self.m)

    def joint_counts(
        self, h: int, strings: Sequence[Sequence[bytes]], whole: Sequence[int], found_z: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """Return f̂_h of the ``whole`` strings, with every string's level-h item's
        found items' collisions taken out, and its variance."""
        items = list(dict.fromkeys(self.item_of(s, h) for s in strings))
        where = {item: i for i, item in enumerate(items)}
        sketch = self.sketches[h]
        raw = self.chunked_counts(h, items)
        keys = sketch.keys([item.decode("latin-1") for item in items])
        counts, variance = disentangle(sketch, raw, round(self.level_n(h)), keys, found_z)
        chosen = [where[self.item_of(strings[i], h)] for i in whole]
        return counts[chosen], variance[chosen]

    def item_of(self, string: Sequence[bytes], h: int) -> bytes:
        """Return what a device holding ``string`` reports at level h (bytes, END if whole)."""
        length = self.lengths[h]
        return b"".join(string[:length]) + (self.end if len(string) < length else b"")

    def chunked_counts(self, h: int, items: Sequence[bytes]) -> np.ndarray:
        """Return f̂_h of many items, gathered ``CHUNK`` at a time."""
        return np.concatenate(
            [self.level_counts(h, items[i : i + CHUNK]) for i in range(0, len(items), CHUNK)]
        )

    def level_size(self, g: int, kept: Sequence[bytes]) -> int:
        """Return how many candidates level g examines after ``kept`` survived level g − 1."""
        if g == 0:
            return _words_up_to(len(self.symbols), self.lengths[0]) - 1
        ended = sum(1 for c in kept if c.endswith(self.end))
        width = self.lengths[g] - self.lengths[g - 1]
        return ended + (len(kept) - ended) * _words_up_to(len(self.symbols), width)

    def first_level(self) -> Iterator[bytes]:
        """Yield level 0's candidates: every word of length L0, every shorter one + END."""
        return (c for c in self.extend([b""], self.lengths[0]) if c != self.end)

    def extend(self, prefixes: Sequence[bytes], width: int) -> Iterator[bytes]:
        """Yield each prefix + w for w of ``width`` symbols, and + shorter w + END."""
        suffixes = [b"".join(w) for w in itertools.product(self.symbols, repeat=width)]
        for shorter in range(width):
            suffixes += [
                b"".join(w) + self.end for w in itertools.product(self.symbols, repeat=shorter)
            ]
        return (p + s for p in prefixes for s in suffixes)


def search(
    levels: LevelSearch,
    top: int,
    survivors: int,
    level: float,
    split: Callable[[bytes], tuple[bytes, ...]],
    decode: Callable[[bytes], str],
) -> Discovery:
    """Run the level-by-level search; return the ``top`` strings of the last level."""
    LevelSearch.check_bounds(len(levels.symbols), levels.lengths, survivors)
    z_value(level)  # refuse a bad confidence level before any work
    kept: list[bytes] = []
    examined: list[int] = []
    history: dict[bytes, tuple[float, int]] = {}  # ended string: Σ f̂_h and levels so far
    for g in range(levels.levels):
        if g == 0:
            candidates: Iterator[bytes] = levels.first_level()
        else:
            width = levels.lengths[g] - levels.lengths[g - 1]
            ended = [c for c in kept if c.endswith(levels.end)]
            open_ = [c for c in kept if not c.endswith(levels.end)]
            candidates = itertools.chain(ended, levels.extend(open_, width))
        z = family_z(level, levels.level_size(g, kept))
        kept, count, history = _top_of(levels, g, candidates, survivors, history, z)
        examined.append(count)
    z = family_z(level, examined[-1])
    result = levels.final([split(c) for c in kept], [decode(c) for c in kept], level, z)
    # Rank by the lower bound (then the estimate): the reliable rows first, and among
    # the others a string known to be frequent before a larger but noisier one.
    bound = result.estimate - z * result.std_error
    order = np.lexsort((-result.estimate, -bound))[:top]
    chosen = Estimates(
        tuple(result.values[i] for i in order),
        result.estimate[order],
        result.std_error[order],
        result.ci_low[order],
        result.ci_high[order],
        result.n,
        result.level,
    )
    reliable = chosen.estimate >= z * chosen.std_error
    return Discovery(chosen, reliable & (chosen.estimate > 0), tuple(examined), z, levels.levels)


def family_z(level: float, candidates: int) -> float:
    """Return the one-sided z of a lower bound at ``level`` family-wise (Bonferroni).

    One-sided: the question is whether a count is above 0, for every candidate at once.
    """
    return NormalDist().inv_cdf(1.0 - (1.0 - level) / max(1, candidates))


def _top_of(
    levels: LevelSearch,
    g: int,
    candidates: Iterator[bytes],
    survivors: int,
    history: dict[bytes, tuple[float, int]],
    z: float,
) -> tuple[list[bytes], int, dict[bytes, tuple[float, int]]]:
    """Return the ``survivors`` items of highest score, chunk by chunk, and how many were seen.

    An open prefix's estimate is its f̂_g. An ended string is whole at this level and at
    every earlier one it survived, so its estimate is the mean of those f̂_h, whose noise
    is smaller: a short frequent string is not lost to one level's noise after it has
    ended. The score is the lower bound estimate − z·SE (SE of the level's CMS noise).
    """
    best: list[bytes] = []
    best_scores, best_sums, best_levels = np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64)
    sketch, n_g = levels.sketches[g], levels.level_n(g)
    seen = 0
    while chunk := list(itertools.islice(candidates, CHUNK)):
        seen += len(chunk)
        counts = levels.level_counts(g, chunk)
        before = [history.get(item, (0.0, 0)) for item in chunk]
        sums = counts + np.array([b[0] for b in before])
        used = 1 + np.array([b[1] for b in before], dtype=np.int64)
        mean = sums / used
        noise = sketch.noise_variance(round(n_g), np.clip(mean, 0, n_g))
        pool = best + chunk
        scores = np.concatenate([best_scores, mean - z * np.sqrt(noise / used)])
        sums, used = np.concatenate([best_sums, sums]), np.concatenate([best_levels, used])
        keep = _highest(pool, scores, survivors)
        best, best_scores = [pool[i] for i in keep], scores[keep]
        best_sums, best_levels = sums[keep], used[keep]
    ended = {
        item: (float(total), int(count))
        for item, total, count in zip(best, best_sums, best_levels, strict=True)
        if item.endswith(levels.end)
    }
    return best, seen, ended


def _highest(pool: list[bytes], scores: np.ndarray, survivors: int) -> list[int]:
    """Return the indices of the ``survivors`` highest scores, ties broken by the item.

    Breaking ties by the item, not by position, makes the result independent of how the
    candidates were cut into chunks.
    """
    if len(pool) > survivors:
        threshold = np.partition(scores, len(pool) - survivors)[len(pool) - survivors]
        contenders = np.flatnonzero(scores >= threshold).tolist()
    else:
        contenders = list(range(len(pool)))
    contenders.sort(key=lambda i: (-scores[i], pool[i]))
    return contenders[:survivors]


def _words_up_to(symbols: int, width: int) -> int:
    """Return Σ_{j ≤ width} symbols^j: the words of length width, and shorter ones + END."""
    return sum(symbols**j for j in range(width + 1))
