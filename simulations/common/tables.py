"""Result tables written side by side as CSV (for tools) and markdown (for people)."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Column:
    """One table column: the row key, its header and how a value is shown in markdown.

    Columns with the default format hold text and are left-aligned; the others right.
    """

    key: str
    header: str
    fmt: str = "{}"
    in_markdown: bool = True  # False: a full-precision column kept for the CSV only


@dataclass
class Table:
    """Rows of plain values (numbers, strings) under named columns."""

    title: str
    columns: Sequence[Column]
    rows: list[dict[str, Any]] = field(default_factory=list)
    notes: str = ""  # shown under the markdown title: units, fixed parameters

    def column(self, key: str) -> list[Any]:
        """Return the values of one column, row by row."""
        return [row[key] for row in self.rows]

    def markdown(self) -> str:
        """Return the table as a GitHub markdown table under a bold title."""
        shown = [c for c in self.columns if c.in_markdown]
        lines = [f"**{self.title}**", ""] + ([self.notes, ""] if self.notes else [])
        lines.append("| " + " | ".join(c.header for c in shown) + " |")
        lines.append("|" + "|".join(":---" if c.fmt == "{}" else "---:" for c in shown) + "|")
        for row in self.rows:
            lines.append("| " + " | ".join(_show(c, row.get(c.key)) for c in shown) + " |")
        return "\n".join(lines) + "\n"

    def write(self, folder: Path, stem: str) -> list[Path]:
        """Write ``stem.csv`` (full precision) and ``stem.md``; return both paths."""
        csv_path, md_path = folder / f"{stem}.csv", folder / f"{stem}.md"
        with csv_path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(
                handle, fieldnames=[c.key for c in self.columns], extrasaction="ignore"
            )
            writer.writeheader()
            writer.writerows(self.rows)
        md_path.write_text(self.markdown(), encoding="utf-8")
        return [csv_path, md_path]


def _show(column: Column, value: Any) -> str:
    # Missing cells (a mechanism that does not apply) print as a dash, not "None".
    if value is None or value == "":
        return "—"
    if isinstance(value, str):
        return value
    return column.fmt.format(value)
