"""The cases of ``python -m simulations coverage``: each registered kind × settings × populations.

A case says how to build the task's mechanism through the registry (a fresh hash seed per
repetition, as a new task draws one), which devices hold which values, what the query
asks, and the truth of every answer. Populations are fixed per case; only the
privatization (and the hash family) is repeated, which is what the collector's standard
errors describe.

Kinds are looked up in the registry; :data:`VALUES` says what values each kind takes, and
a kind the registry gains without an entry here makes :func:`cases` fail loudly.
Longitudinal variants are every kind whose parameters take ``longitudinal``.
"""

from __future__ import annotations

import dataclasses
import functools
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ldp_telemetry.shared.mechanisms.base import Mechanism
from ldp_telemetry.shared.mechanisms.registry import MECHANISMS, params_class
from simulations.common.population import apportion

AZ = string.ascii_lowercase  # the alphabet of the hh settings that declare one

# What values each registered kind takes: booleans, a categorical domain, free strings
# (sketches), symbol strings (heavy hitters), or numbers.
VALUES = {
    "rr": "bool",
    "grr": "domain",
    "oue": "domain",
    "ss": "domain",
    "cms": "strings",
    "hcms": "strings",
    "olh": "strings",
    "hh": "words",
    "numeric": "numbers",
}
SETTINGS: dict[str, tuple[tuple[str, dict[str, Any]], ...]] = {
    "bool": (("ε=0.5", {"epsilon": 0.5}), ("ε=2", {"epsilon": 2.0})),
    "domain": (("ε=1", {"epsilon": 1.0}), ("ε=4", {"epsilon": 4.0})),
    "strings": (
        ("ε=1 k=64 m=256", {"epsilon": 1.0, "k": 64, "m": 256}),
        ("ε=4 k=128 m=512", {"epsilon": 4.0, "k": 128, "m": 512}),
    ),
    "words": (
        ("ε=2 a-z L=6", {"epsilon": 2.0, "k": 64, "m": 256, "max_length": 6, "alphabet": AZ}),
        (
            "ε=4 a-z L=8 s=1",
            {"epsilon": 4.0, "k": 128, "m": 512, "max_length": 8, "step": 1, "alphabet": AZ},
        ),
        ("ε=4 bytes L=6 (defaults)", {"epsilon": 4.0, "k": 128, "m": 512, "max_length": 6}),
    ),
    "numbers": (
        ("sw ε=1 [0,100] 64", {"epsilon": 1.0, "lo": 0.0, "hi": 100.0, "buckets": 64}),
        (
            "sw ε=2 log[1,1e4] 256",
            {"epsilon": 2.0, "lo": 1.0, "hi": 1e4, "buckets": 256, "scale": "log"},
        ),
        ("1bit ε=1 [0,100]", {"epsilon": 1.0, "lo": 0.0, "hi": 100.0, "method": "1bit"}),
        ("1bit ε=4 [0,100]", {"epsilon": 4.0, "lo": 0.0, "hi": 100.0, "method": "1bit"}),
        # Issue 39: the median at ε = 1 over 128 buckets was left reliable while biased.
        ("sw ε=1 [0,100] 128", {"epsilon": 1.0, "lo": 0.0, "hi": 100.0, "buckets": 128}),
    ),
}
LONGITUDINAL = (("ε∞=4 flip=0.1", {"epsilon_inf": 4.0, "flip": 0.1}),)
# grr's LOLOHA variant (BiLOLOHA and the optimal g), 256 seeds: the collision term counts.
LOLOHA = (
    ("loloha g=2 ε∞=4 ε₁=2", {"variant": "loloha", "epsilon_inf": 4.0, "epsilon_1": 2.0, "g": 2}),
    ("loloha optimal ε∞=2 ε₁=1", {"variant": "loloha", "epsilon_inf": 2.0, "epsilon_1": 1.0}),
)
REPEATS = 5  # buckets a longitudinal device reports in (the same permanent response)
DOMAIN = 16  # distinct values of the categorical populations
ABSENT = "absent"  # a value nobody holds, asked of every sketch
DISCOVER_TOP = 5  # strings a discovery case asks for


@dataclass(frozen=True)
class Case:
    """One row group of the table: a mechanism, a population and the query asked."""

    kind: str  # registry name, with "+longitudinal" (and "×5 buckets") when so
    setting: str
    population: str
    build: Callable[[int], Mechanism]  # hash seed → the task's mechanism
    values: Sequence[Any] | np.ndarray  # one per device
    candidates: list[Any] | None  # what the query names (None: the kind's default)
    truth: Callable[[Sequence[Any]], np.ndarray]  # answer names → true values
    repeats: int = 1  # buckets each device reports in (longitudinal: one PRR)
    numeric: bool = False  # answers are statistics, not counts
    costly: bool = False  # an estimate costs a reconstruction (fewer runs)
    discover: int = 0  # > 0: the answer is the top this many strings found without a list
    # numeric: (rng, ) → a fresh draw of the devices' values per run (None: ``values`` fixed)
    draw: Callable[[np.random.Generator], np.ndarray] | None = None


def builder(kind: str, fields: dict[str, Any]) -> Callable[[int], Mechanism]:
    """Return hash seed → the mechanism a task with ``fields`` builds (via the registry)."""
    params = params_class(kind)
    taken = {name: value for name, value in fields.items() if name in params.fields()}
    seeded = "hash_seed" in params.fields()

    def build(seed: int) -> Mechanism:
        given = {**taken, **({"hash_seed": seed} if seeded else {})}
        layer = given.get("longitudinal")
        if isinstance(layer, dict) and "variant" in layer:  # LOLOHA: its hash family's seed
            given["longitudinal"] = {**layer, "hash_seed": seed}
        return params.from_fields(given).build()

    return build


def shares(name: str, size: int) -> np.ndarray:
    """Return a population's weights over ``size`` values, most frequent first."""
    if name == "uniform":
        return np.ones(size)
    if name == "zipf":
        return np.arange(1, size + 1, dtype=float) ** -1.1
    if name == "bimodal":  # two values hold 45 % each, the rest share 10 %
        return np.array([0.45, 0.45] + [0.1 / (size - 2)] * (size - 2))
    if name == "point mass":
        return np.array([1.0] + [0.0] * (size - 1))
    raise ValueError(f"unknown population {name!r}")


def counting_cases(
    kind: str, setting: str, fields: dict[str, Any], n: int, rng: np.random.Generator
) -> list[Case]:
    """Return the count cases of a kind: one per population."""
    values_kind = VALUES[kind]
    if "m" in fields and "m" not in params_class(kind).fields():  # olh: g buckets, not m
        setting = setting.replace(f" m={fields['m']}", "")
    build = builder(kind, fields)
    out = []
    if values_kind == "bool":
        for name, share in (("p=0.5", 0.5), ("p=0.05", 0.05), ("point mass", 1.0)):
            yes = round(n * share)
            values = np.array([True] * yes + [False] * (n - yes))
            truth = _truth_of({True: yes, False: n - yes})
            out.append(Case(kind, setting, name, build, values, None, truth))
        return out
    names = _names(values_kind, rng)
    if values_kind == "domain":
        build = builder(kind, {**fields, "domain": list(names)})
    for population in ("uniform", "zipf", "bimodal", "point mass"):
        counts = apportion(n, shares(population, DOMAIN))
        values = np.repeat(np.array(names, dtype=object), counts)
        asked = None if values_kind == "domain" else [*names[:4], names[8], _absent(values_kind)]
        truth = _truth_of(dict(zip(names, counts.tolist(), strict=True)))
        out.append(Case(kind, setting, population, build, values, asked, truth))
    return out


def _names(values_kind: str, rng: np.random.Generator) -> tuple[str, ...]:
    if values_kind != "words":
        return tuple(f"v{i:02d}" for i in range(DOMAIN))
    # Distinct words of 2 to 6 letters: short ones are whole at many levels, long at few.
    words: dict[str, None] = {}
    while len(words) < DOMAIN:
        length = int(rng.integers(2, 7))
        words["".join(rng.choice(list(AZ), length))] = None
    return tuple(words)


def _absent(values_kind: str) -> str:
    return "zzzq" if values_kind == "words" else ABSENT


def _truth_of(counts: dict[Any, int]) -> Callable[[Sequence[Any]], np.ndarray]:
    def truth(answers: Sequence[Any]) -> np.ndarray:
        return np.array([counts.get(a, 0) for a in answers], dtype=float)

    return truth


# Draws per device that fix a numeric population's own statistics: the truth's error is a
# twentieth of one run's sampling SE, so it moves a row's z̄ by at most ~0.05.
TRUTH_DRAWS = 400


def numeric_cases(
    setting: str, fields: dict[str, Any], n: int, rng: np.random.Generator
) -> list[Case]:
    """Return the numeric cases: uniform, lognormal, bimodal, point mass, 5 % clipped each end.

    A numeric population is a distribution: every run draws its n devices' values afresh
    and the truth is the distribution's own statistic (from ``TRUTH_DRAWS`` · n draws). That
    is what the numeric answers' standard errors describe (see the estimator modules).
    """
    lo, hi, log = fields["lo"], fields["hi"], fields.get("scale") == "log"
    forward = (lambda v: np.log(v)) if log else (lambda v: v)
    back = (lambda u: np.exp(u)) if log else (lambda u: u)
    a, b = forward(lo), forward(hi)
    span = b - a
    populations: dict[str, Callable[..., np.ndarray]] = {
        "uniform": lambda g, size: back(g.uniform(a, b, size)),
        # lognormal: normal on the log scale (linear tasks: median at a fifth of the range)
        "lognormal": lambda g, size: (
            back(g.normal(a + 0.45 * span, 0.12 * span, size))
            if log
            else np.exp(g.normal(np.log(lo + 0.2 * (hi - lo)), 0.5, size))
        ),
        "bimodal": lambda g, size: back(
            np.where(
                g.random(size) < 0.5,
                g.normal(a + 0.25 * span, 0.04 * span, size),
                g.normal(a + 0.75 * span, 0.04 * span, size),
            )
        ),
        "point mass": lambda g, size: np.full(size, back(a + 0.5 * span)),
        "clipped 5%+5%": lambda g, size: np.choose(
            g.choice(3, size, p=[0.9, 0.05, 0.05]),
            [
                back(g.uniform(a, b, size)),
                lo / 2 if log else lo - 10.0,
                hi * 2 if log else hi + 10.0,
            ],
        ),
    }
    build = builder("numeric", fields)
    out = []
    for name, make in populations.items():
        values = make(rng, TRUTH_DRAWS * n)
        numeric: Any = build(0)  # the range's buckets: what the end buckets' truth needs
        numeric = getattr(numeric, "permanent", numeric)  # a longitudinal task's own buckets
        truth = _numeric_truth(values, lo, hi, numeric.buckets_of(values), numeric.d)
        costly = fields.get("method", "sw") == "sw"  # the log-spline fit and its bootstrap refits
        out.append(
            Case(
                "numeric",
                setting,
                name,
                build,
                values[:n],
                None,
                truth,
                numeric=True,
                costly=costly,
                draw=functools.partial(make, size=n),
            )
        )
    return out


def _numeric_truth(
    values: np.ndarray, lo: float, hi: float, buckets: np.ndarray, d: int
) -> Callable[[Sequence[Any]], np.ndarray]:
    """Return statistic names → the distribution's own value (clipped into [lo, hi]).

    ``values``: a large sample of the distribution; ``buckets``: each value's bucket. The
    end buckets' shares include the clipped values, which land there (no report tells
    them apart).
    """
    inside = np.clip(values, lo, hi)
    known = {
        "mean": float(inside.mean()),
        "first_bucket": float(np.mean(buckets == 0)),
        "last_bucket": float(np.mean(buckets == d - 1)),
    }

    def one(name: str) -> float:
        if name not in known and name.startswith("p") and name[1:].replace(".", "", 1).isdigit():
            known[name] = float(np.percentile(inside, float(name[1:])))
        return known.get(name, float("nan"))  # nan: no truth for it (shown as a miss)

    return lambda names: np.array([one(name) for name in names])


def cases(n: int, rng: np.random.Generator) -> list[Case]:
    """Return every case: each registered kind's settings and populations, longitudinal too."""
    missing = set(MECHANISMS) - set(VALUES)
    if missing:
        raise ValueError(f"python -m simulations coverage has no populations for {sorted(missing)}")
    out: list[Case] = []
    for kind in MECHANISMS:
        for setting, fields in SETTINGS[VALUES[kind]]:
            if VALUES[kind] == "numbers":
                out += numeric_cases(setting, fields, n, rng)
            else:
                out += counting_cases(kind, setting, fields, n, rng)
    out += [  # what a kind that discovers answers without a list: its top strings
        dataclasses.replace(case, kind=f"{case.kind} discover", discover=DISCOVER_TOP)
        for case in out
        if not case.numeric and hasattr(case.build(1), "discover")
    ]
    for kind in MECHANISMS:
        if "longitudinal" not in params_class(kind).fields():
            continue
        for setting, spec in LONGITUDINAL:
            if VALUES[kind] == "numbers":  # the one-bit mean: a permanent bit per bucket
                one_bit = next(f for _, f in SETTINGS["numbers"] if f.get("method") == "1bit")
                fields = {**one_bit, "longitudinal": spec}
                fields.pop("epsilon")
                made = numeric_cases(f"1bit {setting}", fields, n, rng)
            else:
                fields = {**dict(SETTINGS[VALUES[kind]][0][1]), "longitudinal": spec}
                fields.pop("epsilon")
                made = counting_cases(kind, setting, fields, n, rng)
            for case in made:
                for repeats in (1, REPEATS):
                    label = f"{kind}+longitudinal" + (f" ×{repeats} buckets" if repeats > 1 else "")
                    out.append(_with(case, label, repeats))
    for setting, layer in LOLOHA:
        loloha: dict[str, Any] = {**dict(SETTINGS["domain"][0][1]), "longitudinal": layer}
        loloha.pop("epsilon")
        for case in counting_cases("grr", setting, loloha, n, rng):
            for repeats in (1, REPEATS):
                label = "grr+loloha" + (f" ×{repeats} buckets" if repeats > 1 else "")
                out.append(_with(case, label, repeats))
    return out


def _with(case: Case, kind: str, repeats: int) -> Case:
    return dataclasses.replace(case, kind=kind, repeats=repeats)
