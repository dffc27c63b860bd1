"""The ``longitudinal`` option of a LOLOHA task, and OLOLOHA's optimal bucket count.

``{"variant": "loloha", "epsilon_inf": ε∞, "epsilon_1": ε₁, "g": 2 | "optimal", "seeds": F,
"hash_seed": S}`` on a grr task (:mod:`ldp_telemetry.shared.mechanisms.lifetime.loloha`).
``hash_seed`` is drawn by the collector when a task is created (like a sketch's). ``g`` stays
as given in the task (``"optimal"`` or an integer); the integer a device uses is published in
``derived``.

``seeds`` defaults to :func:`default_seeds` of the domain's size d and g, filled in when the task
is read (so the task's JSON and fingerprint hold it). The family must tell the d values apart
for the exact estimator (:mod:`ldp_telemetry.shared.mechanisms.lifetime.exact`), which needs
F(g − 1) + 1 ≥ d; near that bound M is ill-conditioned and the error grows, and every row more
links a device's reports better (about n/(F·g) devices share a row and a bucket). The default
takes :data:`SEEDS_PER_VALUE` = 1.5 rows per value per bucket beyond the first,
F = ⌈1.5·(d − 1)/(g − 1)⌉, at least :data:`MIN_SEEDS` (a small domain's family stays far from
two values colliding in every row): for d = 100 that is 50 rows at g = 4 and 149 at g = 2
(measured in simulations/README.md, linkage).

Optimal g (Arcolezi et al. 2023, OLOLOHA): the g that minimises the estimator's variance for a
rare value, (1/g)(1 − 1/g)/(p′ − 1/g)², where p′ is the probability that a report names the
device's own bucket after both layers at ε∞ and ε₁. We take the integer minimiser directly.
With the instantaneous layer calibrated to ε₁ exactly, one report is GRR over g at ε₁, so
p′ = e^ε₁/(e^ε₁ + g − 1) and the optimum depends on ε₁ alone (near e^ε₁ + 1, OLH's). The
paper's closed form depends on ε∞ too: its composition leaves out the (g − 2)·q1·q2 term of
P(report = a wrong bucket), so beyond g = 2 its channel spends less than ε₁ (0.948 at g = 3,
ε∞ = 2, ε₁ = 1) and adds noise that grows with g. Its closed form is right for that channel
(rounded, it is the integer minimiser of that channel's variance: 3 at ε∞ = 2, ε₁ = 1, from
2.79), not for the implemented one, whose optimum there is 4 (g = 3 has 2 % more variance).
A larger g costs lifetime ε (g·ε∞): BiLOLOHA's g = 2 is the choice when the lifetime bound
matters most, g = 3 a middle one (simulations/README.md, lifetime).
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ldp_telemetry.shared.errors import ParameterError
from ldp_telemetry.shared.mechanisms.base import JsonObject
from ldp_telemetry.shared.validation import check_epsilon

VARIANT = "loloha"
OPTIMAL = "optimal"
SEEDS_PER_VALUE = 1.5
MIN_SEEDS = 32
MAX_SEEDS = 1 << 16
MAX_G = 256  # more buckets than this never lowers the variance at ε∞ ≤ ln 255
MAX_HASH_SEED = (1 << 32) - 1
_KEYS = frozenset({"variant", "epsilon_inf", "epsilon_1", "g", "seeds", "hash_seed"})


def is_local_hashing(raw: object) -> bool:
    """Return whether a ``longitudinal`` option asks for the LOLOHA variant."""
    if isinstance(raw, LocalHashingSpec):
        return True
    return isinstance(raw, Mapping) and "variant" in raw


@dataclass(frozen=True)
class LocalHashingSpec(JsonObject):
    """The LOLOHA option as given (``g`` an integer or ``"optimal"``)."""

    epsilon_inf: float
    epsilon_1: float
    g: int | str
    seeds: int
    hash_seed: int
    flip: None = None  # read by Longitudinal: LOLOHA takes its noise from epsilon_1 only

    @classmethod
    def parse(cls, raw: object, domain_size: int) -> LocalHashingSpec:
        """Return the option a JSON object gives for a grr domain of ``domain_size`` values
        (which sets the default ``seeds``), or raise ParameterError naming the fix."""
        if isinstance(raw, LocalHashingSpec):
            return raw
        if not isinstance(raw, Mapping):
            raise ParameterError("longitudinal must be an object")
        unknown = set(raw) - _KEYS
        if unknown:
            raise ParameterError(
                f"longitudinal loloha takes {sorted(_KEYS)}, not {sorted(map(str, unknown))}"
            )
        if raw.get("variant") != VARIANT:
            raise ParameterError(
                f"longitudinal variant must be {VARIANT!r} (leave it out for RAPPOR's layers), "
                f"got {raw.get('variant')!r}"
            )
        missing = [key for key in ("epsilon_inf", "epsilon_1", "hash_seed") if key not in raw]
        if missing:
            raise ParameterError(
                f"longitudinal loloha needs {', '.join(missing)} (hash_seed is drawn when the "
                "collector creates the task)"
            )
        epsilon_inf = check_epsilon(_number(raw["epsilon_inf"], "epsilon_inf"))
        epsilon_1 = check_epsilon(_number(raw["epsilon_1"], "epsilon_1"))
        if epsilon_1 >= epsilon_inf:
            raise ParameterError(
                f"longitudinal epsilon_1 ({epsilon_1}) must be below epsilon_inf ({epsilon_inf}): "
                "one report spends less than the permanent response protects"
            )
        g = raw.get("g", OPTIMAL)
        if g != OPTIMAL and not _integer_in(g, 2, MAX_G):
            raise ParameterError(f'longitudinal g must be an integer 2 … {MAX_G} or "optimal"')
        seeds = raw.get("seeds")
        if seeds is None:
            buckets = optimal_buckets(epsilon_inf, epsilon_1) if g == OPTIMAL else int(g)
            seeds = default_seeds(domain_size, buckets)
        if not _integer_in(seeds, 1, MAX_SEEDS):
            raise ParameterError(f"longitudinal seeds must be an integer 1 … {MAX_SEEDS}")
        hash_seed = raw["hash_seed"]
        if not _integer_in(hash_seed, 0, MAX_HASH_SEED):
            raise ParameterError(f"longitudinal hash_seed must be an integer 0 … {MAX_HASH_SEED}")
        return cls(epsilon_inf, epsilon_1, g, int(seeds), int(hash_seed))

    def buckets(self) -> int:
        """Return g as a device uses it (the optimal one resolved)."""
        if self.g == OPTIMAL:
            return optimal_buckets(self.epsilon_inf, self.epsilon_1)
        return int(self.g)

    def to_json(self) -> dict[str, Any]:
        """Return every field (defaults filled in): what the task's JSON and fingerprint hold."""
        return {
            "variant": VARIANT,
            "epsilon_inf": self.epsilon_inf,
            "epsilon_1": self.epsilon_1,
            "g": self.g,
            "seeds": self.seeds,
            "hash_seed": self.hash_seed,
        }


def with_drawn_hash_seed(raw: object) -> object:
    """Return a LOLOHA option with a hash seed drawn (CSPRNG) unless one is given."""
    if isinstance(raw, Mapping) and is_local_hashing(raw) and raw.get("hash_seed") is None:
        return {**raw, "hash_seed": secrets.randbelow(MAX_HASH_SEED + 1)}
    return raw


def default_seeds(domain_size: int, g: int) -> int:
    """Return the default family size: ⌈1.5·(d − 1)/(g − 1)⌉, at least MIN_SEEDS, at most
    MAX_SEEDS (the module's docstring says why)."""
    wanted = math.ceil(SEEDS_PER_VALUE * (domain_size - 1) / (g - 1))
    return min(MAX_SEEDS, max(MIN_SEEDS, wanted))


def composed_keep(g: int, epsilon_inf: float, epsilon_1: float) -> float:
    """Return p′, P(report = own bucket), when GRR over g at ε∞ is re-randomized to ε₁.

    The permanent layer keeps the bucket with p1 = e^ε∞/(e^ε∞ + g − 1) (each other: q1);
    the instantaneous one keeps with 1 − (g − 1)·t and moves to each other with t, the t
    that makes the composed ratio p′/q′ equal e^ε₁:
    p′ = p1 + t(1 − g·p1), q′ = q1 + t(p1 − q1).
    """
    a, b = math.exp(epsilon_inf), math.exp(epsilon_1)
    p1, q1 = a / (a + g - 1), 1.0 / (a + g - 1)
    t = (p1 - b * q1) / (b * (p1 - q1) - (1.0 - g * p1))
    return p1 + t * (1.0 - g * p1)


def rare_value_variance(g: int, epsilon_inf: float, epsilon_1: float) -> float:
    """Return one report's variance factor for a value nobody holds: (1/g)(1−1/g)/(p′−1/g)²."""
    keep = composed_keep(g, epsilon_inf, epsilon_1)
    return (1.0 / g) * (1.0 - 1.0 / g) / (keep - 1.0 / g) ** 2


def optimal_buckets(epsilon_inf: float, epsilon_1: float) -> int:
    """Return the g in 2 … MAX_G with the least rare-value variance (the smallest on ties)."""
    variances = {g: rare_value_variance(g, epsilon_inf, epsilon_1) for g in range(2, MAX_G + 1)}
    return min(variances, key=lambda g: (variances[g], g))


def _number(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ParameterError(f"longitudinal {name} must be a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise ParameterError(f"longitudinal {name} must be finite")
    return float(value)


def _integer_in(value: object, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
