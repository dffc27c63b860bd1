"""Dictionary-free heavy hitters (task kind ``hh``): prefix extension over CMS (docs/design.md).

A value is a string of at most L symbols (``alphabet``: ``bytes``, meaning its UTF-8 bytes,
or an explicit symbol string such as ``abc…z``). There are G = 1 + ⌈(L − L0)/s⌉ levels of
prefix length ℓ_g = min(L0 + g·s, L). Level g is an ordinary :class:`CountMeanSketch`
(the task's ε, k, m) whose hash seed is the task's seed salted by g; the server keeps its
rows as rows g·k … g·k+k−1 of one (G·k) × m table.

Device: the level is ``int(device_key) mod G`` where device_key = HMAC(device secret, task
id) (:meth:`HeavyHitters.for_device`), so it is fixed per device and task: repeated
reports of one value never reveal two of its prefixes. The device sends one CMS report of
its level's item, x = value[:ℓ_g], or value + END when the value is shorter than ℓ_g
(strictly: a value of length ℓ_g is also every longer value's prefix). One report is
therefore exactly one ε-LDP CMS report.

Without a device key (simulations, tests) :meth:`HeavyHitters.privatize` draws the level
from ``rng`` for each call: a population in which every device reports once. Never use
the unbound mechanism for repeated reports of one device; the SDK always binds it.

Items are hashed as bytes: the prefix's UTF-8 bytes, plus 0xFF for END (a byte UTF-8
never uses), mapped one-to-one onto a str by Latin-1 so the level sketch hashes it.
"""

from __future__ import annotations

import copy
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from ldp_telemetry.shared.errors import ParameterError, ValueOutOfDomain
from ldp_telemetry.shared.estimates import DEFAULT_LEVEL, Estimates
from ldp_telemetry.shared.hashing import MAX_SEED, splitmix64
from ldp_telemetry.shared.mechanisms.base import Batch, check_candidate_strings
from ldp_telemetry.shared.mechanisms.hh.reports import (
    BYTES,
    END,
    MAX_LENGTH,
    UTF8_BYTES,
    HeavyHitterSums,
    LevelBatch,
    LevelReport,
    check_alphabet,
)
from ldp_telemetry.shared.mechanisms.hh.search import (
    DEFAULT_SURVIVORS,
    Discovery,
    LevelSearch,
    search,
)
from ldp_telemetry.shared.mechanisms.poisoning import Check, Reach, rows_test, weight_test
from ldp_telemetry.shared.mechanisms.sketches.cms import CountMeanSketch, SketchBatch, SketchReport
from ldp_telemetry.shared.mechanisms.sketches.row_totals import RowTotals
from ldp_telemetry.shared.randomness import Rng, uniform_below, uniform_below_many
from ldp_telemetry.shared.sums import RowSums, check_shape
from ldp_telemetry.shared.validation import check_int
from ldp_telemetry.shared.wire import integer


class HeavyHitters:
    """The hh mechanism: G count-mean sketches, one per prefix level."""

    name = "hh"
    payload_fields = ("level", "row", "bits")

    def __init__(
        self,
        *,
        epsilon: float,
        k: int,
        m: int,
        hash_seed: int,
        alphabet: str,
        max_length: int,
        first: int = 2,
        step: int = 2,
        device_level: int | None = None,
    ) -> None:
        self.alphabet = check_alphabet(alphabet)
        self.max_length = check_int("max_length", max_length, 1, MAX_LENGTH)
        self.first = check_int("first", first, 1, self.max_length)
        self.step = check_int("step", step, 1, self.max_length)
        self.lengths = (*range(self.first, self.max_length, self.step), self.max_length)
        self.level_count = len(self.lengths)  # G = 1 + ⌈(L − L0)/s⌉
        seed = check_int("hash_seed", hash_seed, 0, MAX_SEED)
        salts = splitmix64(seed, self.level_count)
        # Level 0 keeps the task's seed; level g > 0 hashes with a seed salted by g.
        self.sketches = tuple(
            CountMeanSketch(
                epsilon=epsilon, k=k, m=m, hash_seed=seed if g == 0 else int(salts[g]) & MAX_SEED
            )
            for g in range(self.level_count)
        )
        base = self.sketches[0]
        self.epsilon, self.effective_epsilon = base.epsilon, base.effective_epsilon
        self.k, self.m, self.hash_seed = base.k, base.m, seed
        self.sums_shape = (self.level_count * self.k, self.m)
        self.symbols = (
            UTF8_BYTES if self.alphabet == BYTES else tuple(c.encode() for c in self.alphabet)
        )
        self.device_level = device_level
        self.row_totals = RowTotals()  # the levels estimates read, for the checks
        LevelSearch.check_bounds(len(self.symbols), self.lengths, survivors=1)

    def derived(self) -> dict[str, Any]:
        """Return the integers a device uses (published in the task JSON, PROTOCOL.md §3.7):
        the CMS threshold, each level's prefix length and each level's hash seed."""
        return {
            "T": self.sketches[0].flip_threshold,
            "levels": list(self.lengths),
            "level_seeds": [sketch.hash_seed for sketch in self.sketches],
        }

    def __repr__(self) -> str:
        return (
            f"HeavyHitters(epsilon={self.epsilon!r}, k={self.k}, m={self.m}, "
            f"hash_seed={self.hash_seed}, alphabet={self.alphabet!r}, "
            f"max_length={self.max_length}, first={self.first}, step={self.step})"
        )

    def for_device(self, device_key: bytes) -> HeavyHitters:
        """Return the mechanism of the device whose key (HMAC of its secret) is given."""
        if not isinstance(device_key, bytes | bytearray) or len(device_key) < 16:
            raise ParameterError("hh needs the device's key: at least 16 bytes of HMAC output")
        bound = copy.copy(self)  # shares the level sketches: the client binds per record
        bound.device_level = int.from_bytes(device_key, "big") % self.level_count
        return bound

    # -- values -----------------------------------------------------------------------------

    def units(self, value: object) -> tuple[bytes, ...]:
        """Return the value's symbols after normalisation (raise ValueOutOfDomain)."""
        if not isinstance(value, str):
            raise ValueOutOfDomain(f"expected a str value, got {type(value).__name__}")
        text = unicodedata.normalize("NFC", value)
        if self.alphabet == BYTES:
            try:
                raw = text.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueOutOfDomain("the value is not valid Unicode text") from None
            units = tuple(raw[i : i + 1] for i in range(len(raw)))
        else:
            strange = sorted(set(text) - set(self.alphabet))
            if strange:
                raise ValueOutOfDomain(
                    f"the value has symbols outside the task's alphabet: {len(strange)} distinct"
                )  # never echo the value
            units = tuple(c.encode() for c in text)
        if not 1 <= len(units) <= self.max_length:
            raise ValueOutOfDomain(
                f"the value must have 1 to {self.max_length} symbols, got {len(units)}"
            )
        return units

    def canonical(self, value: object) -> bytes:
        """Return the normalised value's UTF-8 bytes (raise ValueOutOfDomain if invalid)."""
        return b"".join(self.units(value))

    def item(self, units: Sequence[bytes], level: int) -> str:
        """Return what a value reports at ``level``, as the str its level sketch hashes."""
        length = self.lengths[level]
        raw = b"".join(units[:length]) + (END if len(units) < length else b"")
        return raw.decode("latin-1")

    # -- device -----------------------------------------------------------------------------

    def _level(self, rng: Rng) -> int:
        if self.device_level is not None:
            return self.device_level
        return uniform_below(self.level_count, rng)

    def privatize(self, value: str, rng: Rng = None) -> LevelReport:
        """Return the report of one value at the device's level (unbound: drawn from rng)."""
        units = self.units(value)
        level = self._level(rng)
        report = self.sketches[level].privatize(self.item(units, level), rng)
        return LevelReport(level, report.row, report.bits)

    def privatize_many(
        self,
        values: Sequence[str],
        rng: Rng = None,
        levels: Sequence[int] | np.ndarray | None = None,
    ) -> LevelBatch:
        """Return reports of many values (one per device).

        ``levels`` gives each value's level; otherwise a bound device uses its own and an
        unbound mechanism draws each uniformly from ``rng``.
        """
        if isinstance(values, str):
            raise ValueOutOfDomain("expected a sequence of str values, got one str")
        all_units = [self.units(v) for v in values]
        count = len(all_units)
        if levels is not None:
            chosen = np.asarray(levels, dtype=np.int64)
            if chosen.shape != (count,) or (
                count and not (chosen.min() >= 0 and chosen.max() < self.level_count)
            ):
                raise ParameterError(f"levels must be {count} integers in [0, {self.level_count})")
        elif self.device_level is not None:
            chosen = np.full(count, self.device_level, dtype=np.int64)
        else:
            chosen = uniform_below_many(self.level_count, count, rng)
        rows = np.zeros(count, dtype=np.int64)
        bits = np.zeros((count, (self.m + 7) // 8), dtype=np.uint8)
        for level in np.unique(chosen):
            where = np.flatnonzero(chosen == level)
            part = self.sketches[level].privatize_many(
                [self.item(all_units[i], int(level)) for i in where], rng
            )
            rows[where], bits[where] = part.rows, part.bits
        return LevelBatch(chosen, rows, bits)

    def output_probability(self, value: str, report: LevelReport) -> Fraction:
        """Return P(report | value) exactly (0 for a report this device never sends)."""
        if not 0 <= report.level < self.level_count:
            return Fraction(0)
        if self.device_level is not None and report.level != self.device_level:
            return Fraction(0)
        weight = Fraction(1) if self.device_level is not None else Fraction(1, self.level_count)
        sketch = self.sketches[report.level]
        inner = SketchReport(report.row, report.bits)
        return weight * sketch.output_probability(self.item(self.units(value), report.level), inner)

    # -- wire and sums ------------------------------------------------------------------------

    def encode_payload(self, report: LevelReport) -> dict[str, Any]:
        """Return the level, the row and the packed bits as base64url."""
        inner = self.sketches[report.level].encode_payload(SketchReport(report.row, report.bits))
        return {"level": int(report.level), **inner}

    def decode_payload(self, obj: Mapping[str, Any]) -> LevelReport:
        """Return the report a JSON object holds, or raise DecodeError."""
        level = integer(obj, "level", 0, self.level_count - 1)
        inner = self.sketches[level].decode_payload(obj)
        return LevelReport(level, inner.row, inner.bits)

    def stack(self, reports: Sequence[LevelReport]) -> LevelBatch:
        """Return decoded reports as a batch for ``add_many``."""
        count = len(reports)
        bits = np.frombuffer(b"".join(r.bits for r in reports), dtype=np.uint8)
        return LevelBatch(
            np.fromiter((r.level for r in reports), np.int64, count),
            np.fromiter((r.row for r in reports), np.int64, count),
            bits.reshape(count, (self.m + 7) // 8),
        )

    def new_sums(self) -> HeavyHitterSums:
        """Return an empty accumulator of G·k rows."""
        sums = HeavyHitterSums(self.level_count * self.k, self.m)
        sums.k = self.k
        return sums

    def fold(self, batch: LevelBatch) -> RowSums:
        """Return the sums of a batch over only the global rows it touches."""
        return self.sketches[0].fold(SketchBatch(batch.levels * self.k + batch.rows, batch.bits))

    def split_rows(self, batch: LevelBatch, rows_per_part: int) -> Iterator[Batch]:
        """Yield the batch in parts whose global rows fall in one block of rows each."""
        block = (batch.levels * self.k + batch.rows) // rows_per_part
        order = np.argsort(block, kind="stable")
        for part in np.split(order, np.flatnonzero(np.diff(block[order])) + 1):
            yield LevelBatch(batch.levels[part], batch.rows[part], batch.bits[part])

    # -- estimation -------------------------------------------------------------------------

    def parse_candidates(self, raw: Any) -> list[str]:
        """Return the full strings to estimate (required), each a valid value."""
        candidates = check_candidate_strings(raw)
        for candidate in candidates:
            try:
                self.units(candidate)
            except ValueOutOfDomain as error:
                raise ParameterError(f"candidate {candidate[:40]!r}: {error}") from None
        return candidates

    def searcher(self, sums: Any) -> LevelSearch:
        """Return the level-by-level estimator over ``sums`` (see hh_search)."""
        check_shape(sums, self.level_count * self.k, self.m, self)
        return LevelSearch(self.sketches, self.lengths, self.symbols, END, sums, self.row_totals)

    def estimate(
        self, sums: Any, candidates: Sequence[str] | None = None, level: float = DEFAULT_LEVEL
    ) -> Estimates:
        """Estimate full strings' counts from every level where each is whole."""
        if candidates is None:
            raise ParameterError(
                "hh needs candidates to estimate; to find the frequent "
                "strings without a list use discover (heavy-hitters)"
            )
        return self.searcher(sums).final(
            [self.units(c) for c in candidates], list(candidates), level
        )

    def reach(self) -> Reach:
        """Return how far one report moves a string's count: a level's, scaled by G.

        A string's count is read from the levels where it is whole, each level's count
        scaled up by the G levels devices are spread over: a report at the only such
        level moves it G times as far as a plain CMS report (an upper bound otherwise).
        """
        return self.sketches[0].reach().scaled(self.level_count)

    def check_sums(self, sums: Any) -> list[Check]:
        """Return the row-spread test over every level's rows and the total bit weight.

        Each level's total is the one an estimate of these sums read, if one read it
        (row_totals); the other levels are read here.
        """
        check = rows_test(sums.n)
        band = self.sketches[0].band  # every level: the same m and flip
        levels = [(g * self.k, (g + 1) * self.k) for g in range(self.level_count)]
        weight = weight_test(self.row_totals.total(sums, levels), sums.total, band)
        return [check, weight] if check is not None else [weight]

    def discover(
        self,
        sums: Any,
        top: int = 20,
        survivors: int = DEFAULT_SURVIVORS,
        level: float = DEFAULT_LEVEL,
    ) -> Discovery:
        """Find the ``top`` most frequent strings without a dictionary."""
        check_int("top", top, 1, 10_000)
        check_int("survivors", survivors, 1, 100_000)
        return search(
            self.searcher(sums),
            top=top,
            survivors=max(survivors, top),
            level=level,
            split=self.item_units,
            decode=self.decode_item,
        )

    def item_units(self, item: bytes) -> tuple[bytes, ...]:
        """Return the symbols of an item (END dropped)."""
        raw = item.rstrip(END)
        if self.alphabet == BYTES:
            return tuple(raw[i : i + 1] for i in range(len(raw)))
        return tuple(c.encode() for c in raw.decode("utf-8"))  # symbols: whole UTF-8 chars

    def decode_item(self, item: bytes) -> str:
        """Return the string an item names (END dropped; invalid UTF-8 replaced)."""
        return item.rstrip(END).decode("utf-8", "replace")
