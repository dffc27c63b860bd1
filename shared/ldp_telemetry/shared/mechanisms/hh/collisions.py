"""Take a level's known items out of each other's counts (hh discovery; pure numpy).

Symbols as in :mod:`ldp_telemetry.shared.mechanisms.sketches.base` (k rows, m buckets, n reports).
With the hash family fixed, a device holding item h adds to item d's CMS estimate, on average over
the row it drew, a(d, h) = (m/(m−1))·(C(d, h)/k − 1/m), where C(d, h) is the number of rows j with
h_j(d) = h_j(h): a bias, known from the hashes once f(h) is known. The sketch's standard error
counts it as noise of variance Σ_h f(h)²/(k(m−1)) over hash families. That is honest for one count
asked, not for the largest of the thousands a discovery examines: when one string holds nearly every
device, the few candidates that share 3 of 64 rows with it stand 4.5–5.6 SE high and pass a
Bonferroni test.

So a discovery estimates the items of one level jointly: f = r − (A − I)·f_found, with r
the items' raw estimates, A − I the a(d, h) above and f_found the counts of the items
found. Items are taken from the largest down, each found when its count with the found
ones' collisions taken out is at least the discovery's reliable z standard errors (so a
string high only through a found one's rows is not found), then the found counts are
refined twice. Left in each count's variance: its own noise, the noise of the estimates
subtracted (Σ a²·Var f̂(h)), and the spread of how many of h's devices drew a shared row
(f(h)·p(1−p), p = C/k, added on top of the sketch's average 1/m(1−1/m) for every device:
an upper bound). Devices of items not in the set still collide at random, as they do for
an asked count.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ldp_telemetry.shared.mechanisms.sketches.cms import CountMeanSketch

CODES_PER_CHUNK = 1 << 21  # (items × rows) bucket codes hashed at once: 16 MiB of int64
STEPS = 2  # passes over the found counts: each adds one order in the a(d, h) ≤ C/k


@dataclass(frozen=True)
class SharedRows:
    """The pairs of distinct items that share at least one row's bucket, and how many."""

    first: np.ndarray  # index of d
    second: np.ndarray  # index of h (every pair appears both ways)
    rows: np.ndarray  # C(d, h) ≥ 1


def shared_rows(
    sketch: CountMeanSketch, keys: np.ndarray, among: np.ndarray | None = None
) -> SharedRows:
    """Return C(d, h) for every item d and every item h of ``among`` (default: all) that
    share a bucket in some row, d ≠ h.

    Each (row, bucket) becomes the code j·m + h_j; the codes of ``among`` are sorted once
    and every item's codes looked up in them, chunk by chunk, so memory is that of
    ``among`` × k and a chunk, and the work about items × k · log, not items².
    """
    k, m, count = sketch.k, sketch.m, len(keys)
    among = np.arange(count, dtype=np.int64) if among is None else np.asarray(among, np.int64)
    codes = sketch.hashes.flat_bucket_matrix(keys[among], slice(0, k), m).ravel()
    owner = np.repeat(among, k)
    order = np.argsort(codes, kind="stable")
    codes, owner = codes[order], owner[order]
    pair_ids = [np.zeros(0, dtype=np.int64)]
    per_chunk = max(1, CODES_PER_CHUNK // k)
    for first in range(0, count, per_chunk):
        part = np.arange(first, min(count, first + per_chunk), dtype=np.int64)
        mine = sketch.hashes.flat_bucket_matrix(keys[part], slice(0, k), m).ravel()
        low = np.searchsorted(codes, mine, "left")
        width = np.searchsorted(codes, mine, "right") - low
        who = np.repeat(np.repeat(part, k), width)  # d, once per item sharing the cell
        start = np.repeat(low - np.cumsum(width) + width, width)
        other = owner[start + np.arange(len(who))]  # h: walks each cell's run of owners
        keep = other != who
        pair_ids.append(who[keep] * count + other[keep])
    ids, rows = np.unique(np.concatenate(pair_ids), return_counts=True)
    return SharedRows(ids // max(count, 1), ids % max(count, 1), rows)


def disentangle(
    sketch: CountMeanSketch, raw: np.ndarray, n: int, keys: np.ndarray, found_z: float
) -> tuple[np.ndarray, np.ndarray]:
    """Return the items' counts with the found items' collisions taken out, and variances.

    ``raw``: the items' own estimates (``sketch.debias``) over ``n`` reports; ``keys``
    their keys. Items are taken from the largest raw estimate down; one is found when its
    count, with the collisions of those found before it taken out, is at least ``found_z``
    standard errors of noise (a discovery's reliable z). Only found items are subtracted:
    the others' estimates are mostly noise picked for being high (or a found one's
    collisions), and subtracting them would bias the found ones. Only items within
    n/(m−1) (what the found ones' −1/(m−1) shifts add up to at most) of the threshold can
    be found, so only their rows are compared with every item's.
    """
    least = found_z * np.sqrt(sketch.noise_variance(n, np.array([float(n)]))[0])
    contenders = np.flatnonzero(raw >= least - n / (sketch.m - 1))
    pairs = shared_rows(sketch, keys, contenders)
    order = np.argsort(pairs.first, kind="stable")
    first, second, rows = pairs.first[order], pairs.second[order], pairs.rows[order]
    bounds = np.searchsorted(first, np.arange(len(raw) + 1))
    scale, k, m = sketch.m / (sketch.m - 1), sketch.k, sketch.m
    found = np.zeros(len(raw))  # the count of each item found so far, else 0
    for d in contenders[np.argsort(-raw[contenders], kind="stable")]:
        mine = slice(bounds[d], bounds[d + 1])
        # Σ_{h≠d} a(d,h)·f(h) = (m/(m−1))·Σ_shared C·f(h)/k − (S − f(d))/(m−1)
        taken = scale * float(rows[mine] @ found[second[mine]]) / k - found.sum() / (m - 1)
        count = raw[d] - taken
        if count >= found_z * np.sqrt(sketch.noise_variance(n, np.clip([count], 0, n))[0]):
            found[d] = count
    for _ in range(STEPS):  # the found counts again, each with all the others taken out
        spread = (found.sum() - found) / (m - 1)
        shared = np.bincount(first, rows * found[second], len(raw))
        counts = raw - (scale * shared / k - spread)
        found = np.where(found != 0, counts, 0.0)
    return counts, _variance(sketch, counts, n, pairs, found)


def _variance(
    sketch: CountMeanSketch, counts: np.ndarray, n: int, pairs: SharedRows, found: np.ndarray
) -> np.ndarray:
    """Return each count's noise plus what taking the found items out leaves."""
    k, m = sketch.k, sketch.m
    scale = m / (m - 1)
    noise = sketch.noise_variance(n, np.clip(counts, 0, n))
    known = np.where(found != 0, noise, 0.0)  # Var of each subtracted estimate
    p = pairs.rows / k
    coefficient = scale * (p - 1 / m)
    # Σ_{h≠d} a²·Var f̂(h): the found items not sharing a row have a = −1/(m−1)
    apart = (known.sum() - known) / (m - 1) ** 2
    shared_noise = (coefficient**2 - 1 / (m - 1) ** 2) * known[pairs.second]
    drawn = scale**2 * np.clip(found[pairs.second], 0, n) * p * (1 - p)
    extra = np.bincount(pairs.first, shared_noise + drawn, len(counts))
    return noise + apart + extra
