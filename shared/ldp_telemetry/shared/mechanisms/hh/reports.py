"""The hh task kind's reports, batches, accumulator, alphabet and constants."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import numpy as np

from ldp_telemetry.shared.errors import ParameterError
from ldp_telemetry.shared.mechanisms.sketches.cms import (
    CountMeanSketchSums,
    SketchBatch,
    SketchReport,
)

END = b"\xff"  # never a byte of UTF-8, so "value + END" never equals another value
BYTES = "bytes"
# Every byte value that can occur in UTF-8 (0xC0, 0xC1 and 0xF5–0xFF never do).
UTF8_BYTES = tuple(bytes([b]) for b in range(0xF5) if b not in (0xC0, 0xC1))
MAX_LENGTH = 255


@dataclass(frozen=True, slots=True)
class LevelReport:
    """One hh report: the device's level and its level's CMS report (row, packed bits)."""

    level: int
    row: int
    bits: bytes


@dataclass(frozen=True, slots=True)
class LevelBatch:
    """Many hh reports: levels (n,), rows (n,) int64 and packed bits (n, ceil(m/8)) uint8."""

    levels: np.ndarray
    rows: np.ndarray
    bits: np.ndarray

    def __len__(self) -> int:
        return len(self.rows)

    def report(self, i: int) -> LevelReport:
        """Return report i."""
        return LevelReport(int(self.levels[i]), int(self.rows[i]), self.bits[i].tobytes())


class HeavyHitterSums(CountMeanSketchSums):
    """CMS counts of every level in one table: level g's row j is table row g·k + j."""

    k: int  # rows per level, set by HeavyHitters.new_sums

    def add(self, report: LevelReport | SketchReport) -> None:
        """Add one report (a SketchReport's row is already global)."""
        if isinstance(report, LevelReport):
            report = SketchReport(report.level * self.k + report.row, report.bits)
        super().add(report)

    def add_many(self, batch: LevelBatch | SketchBatch) -> None:
        """Add a batch, as one CMS batch over the global rows."""
        if isinstance(batch, LevelBatch):
            batch = SketchBatch(batch.levels * self.k + batch.rows, batch.bits)
        super().add_many(batch)


def check_alphabet(alphabet: object) -> str:
    """Return 'bytes' or an explicit alphabet of distinct NFC symbols, else raise."""
    if alphabet == BYTES:
        return BYTES
    if not isinstance(alphabet, str) or not 2 <= len(alphabet) <= 4096:
        raise ParameterError("alphabet must be 'bytes' or a string of 2 to 4096 symbols")
    if len(set(alphabet)) != len(alphabet):
        raise ParameterError("alphabet must not repeat a symbol")
    if unicodedata.normalize("NFC", alphabet) != alphabet:
        raise ParameterError("alphabet must be NFC-normalised")
    if any(0xD800 <= ord(c) <= 0xDFFF for c in alphabet):
        raise ParameterError("alphabet must not hold surrogates")
    return alphabet
