"""How one experiment run is configured: seed, output folder, size and progress bars."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np
from tqdm import tqdm

DEFAULT_OUT = Path("out") / "simulations"

T = TypeVar("T")


@dataclass(frozen=True)
class RunSettings:
    """Settings shared by every experiment.

    ``quick`` selects the small sizes used by the tests (seconds instead of minutes);
    ``show_progress`` draws tqdm bars on stderr for the long loops.
    """

    seed: int = 2026
    out_dir: Path = DEFAULT_OUT
    quick: bool = False
    show_progress: bool = True

    def rng(self) -> np.random.Generator:
        """Return a fresh generator from the run's seed (same seed, same numbers)."""
        return np.random.default_rng(self.seed)

    def folder(self, experiment: str) -> Path:
        """Return (and create) the output folder of one experiment."""
        path = self.out_dir / experiment
        path.mkdir(parents=True, exist_ok=True)
        return path


def progress(
    items: Iterable[T], description: str, enabled: bool, total: int | None = None
) -> Iterator[T]:
    """Iterate over ``items`` with a tqdm bar when ``enabled``."""
    yield from tqdm(
        items, desc=description, total=total, disable=not enabled, leave=False, unit="step"
    )
