"""The fake devices' reports per frequency kind, for :mod:`simulations.poisoning.experiment`.

``CRAFT[kind](mechanism, targets, count, rng, padded)`` returns ``count`` reports built to
raise the targets' estimates (the maximal-gain attack of Cao et al. 2021; ``padded``: with
as many ones as an honest report carries, which the weight check cannot tell apart);
``RANDOM[kind](mechanism, count, rng)`` returns uniformly random valid reports.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ldp_telemetry.shared.mechanisms.olh import HashedBatch
from ldp_telemetry.shared.mechanisms.sketches.cms import SketchBatch
from ldp_telemetry.shared.mechanisms.sketches.hcms import HadamardBatch


def _craft_grr(mech: Any, targets: list[str], count: int, rng: Any, padded: bool) -> Any:
    return np.array([mech.index_of(t) for t in rng.choice(targets, count)], dtype=np.int64)


def _craft_olh(mech: Any, targets: list[str], count: int, rng: Any, padded: bool) -> Any:
    keys = mech.keys(targets)
    rows = np.arange(mech.k)
    buckets = mech.hashes.buckets(keys[None, :], rows[:, None])  # (k, r)
    hits = np.stack([(buckets == b).sum(axis=1) for b in range(mech.g)], axis=1)  # (k, g)
    row, bucket = np.unravel_index(int(np.argmax(hits)), hits.shape)
    return HashedBatch(np.full(count, row, np.int64), np.full(count, bucket, np.int64))


def _craft_oue(mech: Any, targets: list[str], count: int, rng: Any, padded: bool) -> Any:
    bits = np.zeros((count, mech.d), dtype=bool)
    bits[:, [mech.index_of(t) for t in targets]] = True
    if padded:  # random other ones up to an honest report's mean weight
        want = round(mech.band.mean)
        for i in range(count):
            free = np.flatnonzero(~bits[i])
            bits[i, rng.choice(free, max(0, want - int(bits[i].sum())), replace=False)] = True
    return np.packbits(bits, axis=1)


def _craft_ss(mech: Any, targets: list[str], count: int, rng: Any, padded: bool) -> Any:
    # As many targets as a subset holds; the rest of the subset random others.
    chosen = [mech.index_of(t) for t in targets][: mech.omega]
    rest = np.setdiff1d(np.arange(mech.d), chosen)
    rows = [
        sorted(chosen + list(rng.choice(rest, mech.omega - len(chosen), replace=False)))
        for _ in range(count)
    ]
    return np.array(rows, dtype=np.int64).reshape(count, mech.omega)


def _craft_cms(mech: Any, targets: list[str], count: int, rng: Any, padded: bool) -> Any:
    keys = mech.keys(targets)
    rows = rng.integers(0, mech.k, count)
    bits = np.zeros((count, mech.m), dtype=bool)
    bits[np.arange(count)[:, None], mech.hashes.buckets(keys[None, :], rows[:, None])] = True
    if padded:  # add random ones up to an honest report's mean weight
        want = round(mech.band.mean)
        for i in range(count):
            free = np.flatnonzero(~bits[i])
            bits[i, rng.choice(free, max(0, want - int(bits[i].sum())), replace=False)] = True
    return SketchBatch(rows.astype(np.int64), np.packbits(bits, axis=1))


def _craft_hcms(mech: Any, targets: list[str], count: int, rng: Any, padded: bool) -> Any:
    # Hadamard row 0 is all +1: bit 1 there adds c_ε to every value of the report's row.
    rows = rng.integers(0, mech.k, count).astype(np.int64)
    return HadamardBatch(rows, np.zeros(count, np.int64), np.ones(count, np.uint8))


def _random_grr(mech: Any, count: int, rng: Any) -> Any:
    return rng.integers(0, mech.d, count).astype(np.int64)


def _random_olh(mech: Any, count: int, rng: Any) -> Any:
    return HashedBatch(
        rng.integers(0, mech.k, count).astype(np.int64),
        rng.integers(0, mech.g, count).astype(np.int64),
    )


def _random_oue(mech: Any, count: int, rng: Any) -> Any:
    return np.packbits(rng.integers(0, 2, (count, mech.d)).astype(bool), axis=1)


def _random_ss(mech: Any, count: int, rng: Any) -> Any:
    rows = [np.sort(rng.choice(mech.d, mech.omega, replace=False)) for _ in range(count)]
    return np.array(rows, dtype=np.int64).reshape(count, mech.omega)


def _random_cms(mech: Any, count: int, rng: Any) -> Any:
    bits = rng.integers(0, 2, (count, mech.m)).astype(bool)
    return SketchBatch(rng.integers(0, mech.k, count).astype(np.int64), np.packbits(bits, axis=1))


def _random_hcms(mech: Any, count: int, rng: Any) -> Any:
    return HadamardBatch(
        rng.integers(0, mech.k, count).astype(np.int64),
        rng.integers(0, mech.m, count).astype(np.int64),
        rng.integers(0, 2, count).astype(np.uint8),
    )


CRAFT = {
    "grr": _craft_grr,
    "olh": _craft_olh,
    "oue": _craft_oue,
    "ss": _craft_ss,
    "cms": _craft_cms,
    "hcms": _craft_hcms,
}
RANDOM = {
    "grr": _random_grr,
    "olh": _random_olh,
    "oue": _random_oue,
    "ss": _random_ss,
    "cms": _random_cms,
    "hcms": _random_hcms,
}
