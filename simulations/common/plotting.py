"""Matplotlib on the non-interactive Agg backend, with the house style for every figure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only: no display on servers and in CI

import matplotlib.pyplot as plt  # after the backend choice, on purpose
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter

__all__ = ["EMPIRICAL_STYLE", "THEORY_STYLE", "Axes", "Figure", "NullFormatter", "figure", "save"]

THEORY_STYLE: dict[str, Any] = {"linestyle": "-", "linewidth": 1.6, "alpha": 0.85}
EMPIRICAL_STYLE: dict[str, Any] = {
    "marker": "o",
    "linestyle": "none",
    "markersize": 6,
    "markerfacecolor": "none",
    "markeredgewidth": 1.5,
}


def figure(
    panels: int = 1, width: float = 6.4, height: float = 4.6, rows: int = 1
) -> tuple[Figure, list[Axes]]:
    """Return a figure with ``panels`` axes per row and ``rows`` rows, listed row by row."""
    fig, axes = plt.subplots(rows, panels, figsize=(width * panels, height * rows), squeeze=False)
    return fig, list(axes.ravel())


def save(fig: Figure, path: Path) -> Path:
    """Write the figure as PNG and release its memory."""
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
