"""A simulated population: each device has a favourite emoji (Zipf) and a yes/no answer."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

# 40 emoji; the analyst's candidate list is this vocabulary.
VOCABULARY: tuple[str, ...] = (
    "😂", "💙", "🤣", "👍", "😭", "🙏", "😘", "🥰", "😍", "😊",
    "🎉", "😁", "💕", "🥺", "😅", "🔥", "😇", "🤦", "😢", "🤷",
    "🙄", "😆", "🤗", "😉", "🎂", "🤔", "👏", "🙂", "😳", "🥳",
    "😎", "👌", "💜", "😔", "💪", "✨", "💖", "👀", "😋", "😏",
)


@dataclass(frozen=True)
class Population:
    """What each simulated device holds (the raw values only the devices see)."""

    emoji: list[str]
    dark_mode: list[bool]

    def emoji_counts(self) -> Counter[str]:
        """Return the true count of each emoji."""
        return Counter(self.emoji)

    def dark_mode_count(self) -> int:
        """Return how many devices truly answer yes."""
        return sum(self.dark_mode)


def make_population(devices: int, *, seed: int, zipf_s: float = 1.1,
                    dark_mode_share: float = 0.35) -> Population:
    """Draw a population: Zipf(s) over the vocabulary's ranks, Bernoulli yes/no."""
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, len(VOCABULARY) + 1, dtype=float)
    weights = ranks**-zipf_s
    picks = rng.choice(len(VOCABULARY), size=devices, p=weights / weights.sum())
    answers = rng.random(devices) < dark_mode_share
    return Population([VOCABULARY[i] for i in picks], [bool(a) for a in answers])
