"""A simulated population: each device has a favourite emoji (Zipf), a yes/no answer and a
word it typed (Zipf over a list the analyst never gives the collector)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

# 40 emoji; the analyst's candidate list is this vocabulary.
VOCABULARY: tuple[str, ...] = (
    "😂",
    "💙",
    "🤣",
    "👍",
    "😭",
    "🙏",
    "😘",
    "🥰",
    "😍",
    "😊",
    "🎉",
    "😁",
    "💕",
    "🥺",
    "😅",
    "🔥",
    "😇",
    "🤦",
    "😢",
    "🤷",
    "🙄",
    "😆",
    "🤗",
    "😉",
    "🎂",
    "🤔",
    "👏",
    "🙂",
    "😳",
    "🥳",
    "😎",
    "👌",
    "💜",
    "😔",
    "💪",
    "✨",
    "💖",
    "👀",
    "😋",
    "😏",
)

# The words devices type: heavy-hitter discovery must find the frequent ones without them.
WORDS: tuple[str, ...] = (
    "hello",
    "thanks",
    "please",
    "sorry",
    "lunch",
    "coffee",
    "later",
    "maybe",
    "tonight",
    "weekend",
    "movie",
    "music",
    "pizza",
    "happy",
    "birthday",
    "love",
    "miss",
    "work",
    "home",
    "sleep",
    "game",
    "party",
    "dinner",
    "beach",
    "train",
    "phone",
    "photo",
    "dance",
    "money",
    "water",
    "family",
    "friend",
    "school",
    "summer",
    "winter",
    "garden",
    "market",
    "cinema",
    "soccer",
    "tennis",
    "guitar",
    "piano",
    "travel",
    "hotel",
    "flight",
    "ticket",
    "museum",
    "forest",
    "river",
    "island",
    "doctor",
    "pasta",
    "salad",
    "bread",
    "cheese",
    "apple",
    "banana",
    "orange",
    "lemon",
    "mango",
)


@dataclass(frozen=True)
class Population:
    """What each simulated device holds (the raw values only the devices see)."""

    emoji: list[str]
    dark_mode: list[bool]
    words: list[str]

    def emoji_counts(self) -> Counter[str]:
        """Return the true count of each emoji."""
        return Counter(self.emoji)

    def word_counts(self) -> Counter[str]:
        """Return the true count of each word."""
        return Counter(self.words)

    def dark_mode_count(self) -> int:
        """Return how many devices truly answer yes."""
        return sum(self.dark_mode)


def make_population(
    devices: int, *, seed: int, zipf_s: float = 1.1, dark_mode_share: float = 0.35
) -> Population:
    """Draw a population: Zipf(s) over the vocabulary's and the words' ranks, yes/no."""
    rng = np.random.default_rng(seed)
    picks = _zipf(rng, len(VOCABULARY), devices, zipf_s)
    answers = rng.random(devices) < dark_mode_share
    typed = _zipf(rng, len(WORDS), devices, zipf_s)
    return Population(
        [VOCABULARY[i] for i in picks], [bool(a) for a in answers], [WORDS[i] for i in typed]
    )


def _zipf(rng: np.random.Generator, size: int, draws: int, s: float) -> np.ndarray:
    weights = np.arange(1, size + 1, dtype=float) ** -s
    return rng.choice(size, size=draws, p=weights / weights.sum())
