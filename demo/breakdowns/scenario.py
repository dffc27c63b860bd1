"""The breakdowns scenario: one task with two public dimensions and a population of devices.

Devices run on 3 listed platforms (and linux, not in the task's list: the SDK sends
``other``) and 4 listed app versions (and 6.0-beta: ``other``), 4 × 5 = 20 slices; each
platform has its own distribution of the 4 values. One listed slice, web on 5.1, holds
exactly ``THIN_DEVICES`` = 30 devices, fewer than the task's min_slice_size (50), so every
grouped answer must roll it up. Each device also hands its SDK an undeclared dimension
(``model``), which the SDK drops. The population is seeded; the privacy noise is the SDK's.

One place for the scenario: ``python -m demo.breakdowns`` runs it at 20,000 devices, and
tests/client/dimensions and tests/demo run it small.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

VALUES = ("a", "b", "c", "d")
# Each platform's share of devices and its distribution over VALUES; linux is not listed.
PLATFORMS: dict[str, tuple[float, tuple[float, ...]]] = {
    "android": (0.4, (0.5, 0.3, 0.15, 0.05)),
    "ios": (0.3, (0.1, 0.2, 0.3, 0.4)),
    "web": (0.2, (0.25, 0.25, 0.25, 0.25)),
    "linux": (0.1, (0.7, 0.1, 0.1, 0.1)),
}
VERSIONS = ("5.1", "5.2", "5.3", "5.4", "6.0-beta")  # 6.0-beta is not listed
DIMENSIONS: list[dict[str, Any]] = [
    {"name": "platform", "values": ["android", "ios", "web"]},
    {"name": "app_version", "values": ["5.1", "5.2", "5.3", "5.4"]},
]
NAMES = tuple(d["name"] for d in DIMENSIONS)
OTHER = "other"
THIN = ("web", "5.1")  # the slice that holds exactly THIN_DEVICES devices
THIN_DEVICES = 30
MIN_SLICE_SIZE = 50
TASK: dict[str, Any] = {
    "task_id": "fonts",
    "mechanism": "grr",
    "epsilon": 2.0,
    "domain": list(VALUES),
    "min_batch_size": 20,
    "min_slice_size": MIN_SLICE_SIZE,
    "dimensions": DIMENSIONS,
}
Slice = tuple[str, ...]  # one value per declared dimension, "other" for an unlisted one


@dataclass(frozen=True)
class Device:
    """What one device's app knows: its platform, app version and the value it records."""

    platform: str
    version: str
    value: str

    def given(self, index: int) -> dict[str, str]:
        """Return the dimensions the app hands its SDK (``model`` is not declared)."""
        return {"platform": self.platform, "app_version": self.version, "model": f"m{index}"}

    @property
    def slice(self) -> Slice:
        """Return the slice the collector must count it in (by hand, not the SDK's code)."""
        return tuple(
            given if given in declared["values"] else OTHER
            for given, declared in zip((self.platform, self.version), DIMENSIONS, strict=True)
        )


def population(devices: int, seed: int) -> list[Device]:
    """Return ``devices`` devices, exactly THIN_DEVICES of them in the THIN slice, shuffled."""
    if devices < 2 * THIN_DEVICES:
        raise ValueError(f"the scenario needs at least {2 * THIN_DEVICES} devices")
    rng = np.random.default_rng(seed)
    names = list(PLATFORMS)
    platforms = rng.choice(len(names), size=devices, p=[PLATFORMS[p][0] for p in names])
    versions = rng.integers(len(VERSIONS), size=devices)
    pairs = [(names[int(p)], VERSIONS[int(v)]) for p, v in zip(platforms, versions, strict=True)]
    others = [v for v in VERSIONS if v != THIN[1]]
    pairs = [  # no device in THIN but the planted ones
        (p, others[int(rng.integers(len(others)))]) if (p, v) == THIN else (p, v)
        for p, v in pairs[THIN_DEVICES:]
    ]
    pairs = [THIN] * THIN_DEVICES + pairs
    out = [Device(p, v, VALUES[int(rng.choice(len(VALUES), p=PLATFORMS[p][1]))]) for p, v in pairs]
    order = rng.permutation(devices)
    return [out[int(i)] for i in order]


def truth(devices: list[Device]) -> dict[Slice, Counter[str]]:
    """Return each slice's true count of every value."""
    out: dict[Slice, Counter[str]] = {}
    for device in devices:
        out.setdefault(device.slice, Counter())[device.value] += 1
    return out
