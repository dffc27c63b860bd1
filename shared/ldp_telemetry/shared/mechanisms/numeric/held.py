"""A breakdown row's bootstrap refits: the full searches of the same draws, side by side.

A full refit (:func:`refits.refit`) is a P-spline search (:func:`pspline.search`) per draw:
down the grid of λ from the stiffest, a damped Fisher-scoring fit at each started from the
last (end terms reset to 0), stopped by :func:`pspline.searched`. A row's refits are the same
searches of the same seeded draws y*, run side by side and started closer: at each λ every
draw's fit starts from the fit at that λ of the draws' expected counts (one search of
n × the outputs of the distribution they are drawn from: the centre of the draws; end terms
reset to 0 as a search resets them, since an emptied end bucket has no gradient to refill
it), takes ``HELD_STEPS`` scoring steps with that start's information, then Newton steps on
the exact penalized likelihood (its observed curvature recomputed at every step; a Fisher
step where it is not negative definite)

    θ ← θ + (H(θ; y*) + λP)⁻¹ · s_λ(θ; y*),

a step that loses halved (at most ``HALVINGS`` times), none moving a coefficient by more
than ``MOST_MOVE``, a whole step that gains stretched once (an end term whose optimum is at
-∞ gains e⁻¹ as much per Newton step), until a step gains less than ``pspline.GAIN`` per
report or ``pspline.STEPS`` were taken: the stop of a full fit. Each fit's edf is its own
(its Fisher information), its criterion AIC, and its search stops by
:func:`pspline.searched`: the same rules, so a refit reaches the fits a full search reaches
(on the same 40 draws of a row with 5 % clipped at each end, ε = 1 over 64 buckets, the
median per-draw difference of p2-p98 is under 1/1,000 of their spread and the spreads agree
within 0.91-1.03; tests/shared/mechanisms/numeric/test_held.py). A piled alternative's
refits (a pile doubt, :mod:`doubt`) take the same path from its own draws.
What it saves: the searches run side by side on arrays, and from the centre each λ's fit
needs a few Newton steps; a row costs about half to two thirds of a full answer. A step's
arrays (draws × spline columns × outputs) cost by their passes, not by numpy's calls, so the
step takes few: the jacobian summed only where each spline column is not 0, into a reused
buffer; tr(F) alone sizes the pin (F itself where the Newton step is not convex, and where a
fit stops, for its edf); the curvature's centred term over the columns sharing a bucket; a
Cholesky of the stack before any eigenvalues; each Gram product one symmetric product (rows
at 0.80 of the dense step's CPU, their answers within 1e-9 of its:
tests/shared/mechanisms/numeric/test_held.py; benchmarks/README.md, "Breakdowns"). Four held
steps from the row's own fit (the previous version) cost a tenth but under-varied near a
range's end (a clipped p95's refits spread 0.1-0.3 times a full search's; reliable row
percentiles covered 85.2 % at ε = 1 over 64 buckets).
Coverage: ``python -m simulations.coverage.numeric_rows --as-row`` (simulations/README.md).
"""

from __future__ import annotations

import functools

import numpy as np

from ldp_telemetry.shared.mechanisms.numeric import pspline
from ldp_telemetry.shared.mechanisms.numeric.channel import Channel

MOST_MOVE = 3.0  # the largest change of one coefficient in a step (e^3: a share × 20)
HALVINGS = 8  # a step that loses is halved at most this many times
HELD_STEPS = 5  # scoring steps with the start's information held, before Newton's
STRETCH = 4.0  # a whole step that gains is tried this many times as long


def refit(
    channel: Channel, centre: pspline.Search, draws: np.ndarray
) -> list[tuple[np.ndarray, list[np.ndarray]]]:
    """Return, per row of output counts ``draws`` (all of one n), what :func:`pspline.select`
    answers (the best fit, the less smoothed fits after it), each λ's fit started from
    ``centre``'s there (the search of the draws' expected counts)."""
    return _search(channel, list(centre.thetas), draws)


def _search(
    channel: Channel, starts: list[np.ndarray], draws: np.ndarray
) -> list[tuple[np.ndarray, list[np.ndarray]]]:
    """Search λ for every draw side by side, each λ's fits started from ``starts`` (past its
    last λ: from the draw's own last fit, end terms reset as a search resets them)."""
    design, pen = pspline.design(channel)
    functions = design.shape[1] - 2
    y = np.atleast_2d(np.asarray(draws, dtype=float))
    scores: list[list[float]] = [[] for _ in y]
    edfs: list[list[float]] = [[] for _ in y]
    fits: list[list[np.ndarray]] = [[] for _ in y]
    active = np.arange(len(y))
    n = np.array([float(y[0].sum())])
    own = np.zeros((len(y), design.shape[1]))
    for k in range(len(pspline.GRID)):
        if not len(active):
            break
        lam = float(pspline.GRID[k])
        start = np.tile(starts[k], (len(active), 1)) if k < len(starts) else own[active].copy()
        start[:, functions:] = 0.0  # as a search resets them: an emptied end gets no gradient
        held = None
        if HELD_STEPS and k < len(starts):
            at, outputs = _evaluate(channel, design, start[:1])
            held = n * _gram(_jacobian(channel, design, at, outputs), 1.0 / outputs)[0]
        x, like, theta, edf = converge(channel, design, pen, lam, start, y[active], held)
        own[active] = theta
        going = []
        for j, i in enumerate(active):
            fits[i].append(x[j])
            scores[i].append(float(-2 * like[j] + pspline.PRICE * edf[j]))
            edfs[i].append(float(edf[j]))
            if not pspline.searched(scores[i], edfs[i]):
                going.append(i)
        active = np.array(going, dtype=int)
    out = []
    for tried, scored in zip(fits, scores, strict=True):
        chosen = int(np.argmin(scored))
        out.append((tried[chosen], tried[chosen + 1 :]))
    return out


def converge(
    channel: Channel,
    design: np.ndarray,
    pen: np.ndarray,
    lam: float,
    theta: np.ndarray,
    y: np.ndarray,
    held: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return each row of counts ``y``'s fit at ``lam`` from coefficients ``theta`` (a row
    each): distributions, log-likelihoods, coefficients and edfs.

    Newton steps on the exact penalized likelihood (its observed curvature, recomputed at
    every step), a Fisher-scoring step where that curvature is not negative definite,
    every step halved while it loses, until a step gains less than ``pspline.GAIN`` per
    report or ``pspline.STEPS`` were taken: the stop of a full fit (:func:`pspline.fit`),
    reached in fewer steps (Fisher scoring converges linearly: 9-12 steps from a row's fit
    to a draw's optimum where Newton takes 3-5). The edf is each fit's own, from its Fisher
    information (:func:`pspline.edf`).
    """
    functions = design.shape[1] - 2
    n = y.sum(axis=1)
    thetas = np.array(theta, dtype=float)
    x, f = _evaluate(channel, design, thetas)
    value = _penalized(y, f, lam, pen, thetas)
    pin = np.zeros(design.shape[1])
    pin[:functions] = 1.0  # a constant added to every spline coefficient changes nothing
    pinned = np.outer(pin, pin) + 1e-9 * np.eye(len(pin))
    if held is not None:  # scoring steps with one information for all, until they gain little
        size = np.trace(held) + 1.0
        inverse = np.linalg.inv(held + lam * pen + pinned * size)
        rows = np.arange(len(y))
        for _ in range(HELD_STEPS):
            if not len(rows):
                break
            h = channel.backward(y[rows] / f[rows])
            score = (x[rows] * (h - n[rows, None])) @ design - lam * thetas[rows] @ pen
            moves = score @ inverse
            rows = rows[_climb(channel, design, pen, lam, y, n, rows, moves, thetas, x, f, value)]
    rows = np.arange(len(y))  # the fits still gaining
    pairs = _pairs(channel)
    info = np.zeros((len(y), design.shape[1], design.shape[1]))
    work = np.empty((2, len(y), design.shape[1], channel.outputs))  # the jacobian, a product
    for _ in range(pspline.STEPS):
        if not len(rows):
            break
        xs, fs = x[rows], f[rows]
        h = channel.backward(y[rows] / fs)
        spread = xs * (h - n[rows, None])
        score = spread @ design - lam * thetas[rows] @ pen
        jacobian = _jacobian(channel, design, xs, fs, work[0][: len(rows)])
        curvature = _gram(jacobian, y[rows] / fs**2, work[1][: len(rows)]) - _centred(
            pairs, xs @ design, spread
        )
        # tr(F) alone sizes the pin (F itself only where Newton's step is not convex, and
        # where a fit stops, for its edf)
        size = n[rows] * np.sum(np.einsum("fco,fco->fo", jacobian, jacobian) / fs, axis=1) + 1
        ridge = lam * pen + pinned * size[:, None, None]
        newton = curvature + ridge
        convex = _convex(newton)
        if not np.all(convex):  # Fisher scoring there
            flat = np.flatnonzero(~convex)
            newton[flat] = n[rows[flat], None, None] * _gram(jacobian[flat], 1.0 / fs[flat])
            newton[flat] += ridge[flat]
        moves = np.linalg.solve(newton, score[..., None])[..., 0]
        gained = _climb(channel, design, pen, lam, y, n, rows, moves, thetas, x, f, value)
        stopped = np.flatnonzero(~gained)  # their information where this step started
        info[rows[stopped]] = n[rows[stopped], None, None] * _gram(
            jacobian[stopped], 1.0 / fs[stopped]
        )
        rows = rows[gained]
    if len(rows):  # stopped by the step limit: their information where they stopped
        info[rows] = n[rows, None, None] * _gram(
            _jacobian(channel, design, x[rows], f[rows]), 1.0 / f[rows]
        )
    return x, np.sum(y * np.log(f), axis=1), thetas, pspline.edf(info, lam * pen, functions)


def _climb(
    channel: Channel,
    design: np.ndarray,
    pen: np.ndarray,
    lam: float,
    y: np.ndarray,
    n: np.ndarray,
    rows: np.ndarray,
    moves: np.ndarray,
    thetas: np.ndarray,
    x: np.ndarray,
    f: np.ndarray,
    value: np.ndarray,
) -> np.ndarray:
    """Move each of ``rows`` by its ``moves`` (no coefficient by more than ``MOST_MOVE``),
    halved while it loses (at most ``HALVINGS`` times), updating ``thetas``, ``x``, ``f``
    and ``value`` in place; return which rows gained at least ``pspline.GAIN`` per report."""
    largest = np.maximum(np.abs(moves).max(axis=1, keepdims=True), 1e-300)
    moves = moves * np.minimum(1.0, MOST_MOVE / largest)
    before = value[rows].copy()
    trying = np.arange(len(rows))
    whole = np.zeros(len(rows), dtype=bool)  # took the whole move
    for halving in range(HALVINGS):
        at = rows[trying]
        moved = thetas[at] + moves[trying]
        x2, f2 = _evaluate(channel, design, moved)
        value2 = _penalized(y[at], f2, lam, pen, moved)
        up = value2 >= value[at]
        took = at[up]
        whole[trying[up]] = halving == 0
        thetas[took], x[took], f[took], value[took] = moved[up], x2[up], f2[up], value2[up]
        trying = trying[~up]
        if not len(trying):
            break
        moves[trying] /= 2
    # A whole move that gained is stretched once more (a term whose optimum is at infinity,
    # an end bucket emptied, gains e^-1 as much per Newton step: 9 steps to the stop)
    far = np.flatnonzero(whole)
    if len(far):
        extra = moves[far] * (STRETCH - 1)
        extra *= np.minimum(
            1.0, MOST_MOVE / np.maximum(np.abs(extra).max(axis=1, keepdims=True), 1e-300)
        )
        at = rows[far]
        moved = thetas[at] + extra
        x2, f2 = _evaluate(channel, design, moved)
        value2 = _penalized(y[at], f2, lam, pen, moved)
        up = value2 > value[at]
        took = at[up]
        thetas[took], x[took], f[took], value[took] = moved[up], x2[up], f2[up], value2[up]
    gained: np.ndarray = value[rows] - before >= pspline.GAIN * n[rows]
    return gained


def _jacobian(
    channel: Channel,
    design: np.ndarray,
    x: np.ndarray,
    f: np.ndarray,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Return each fit's ∂(output probabilities)/∂θ, (fits, columns, outputs), into ``out``
    if given: far·Σ_b x_b·D_bc + (near − far)·Σ_{o−w<b≤o} x_b·D_bc − f_o·(x·D)_c, the window
    sums through one cumulative sum per column over the buckets where it is not 0
    (:func:`_windows`; elsewhere they are exactly 0)."""
    inputs, values, outputs = _windows(channel)
    window, length = channel.window, inputs.shape[1]
    weighted = x[:, inputs] * values  # (fits, columns, length)
    sums = np.empty((*weighted.shape[:-1], length + 2 * window - 1))  # 0s, Σ, totals
    sums[..., :window] = 0.0
    np.cumsum(weighted, axis=-1, out=sums[..., window : window + length])
    total = sums[..., window + length - 1 : window + length]
    sums[..., window + length :] = total
    inside = sums[..., window : window + length + window - 1] - sums[..., : length + window - 1]
    m = x @ design
    jacobian = np.multiply(f[:, None, :], m[:, :, None], out=out)
    np.subtract(channel.far * total, jacobian, out=jacobian)  # where the window sums are 0
    inside *= channel.near - channel.far
    inside += channel.far * total
    inside -= f[:, outputs] * m[:, :, None]
    jacobian[:, np.arange(len(inputs))[:, None], outputs] = inside
    return jacobian


@functools.lru_cache(maxsize=16)
def _windows(channel: Channel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return, per design column, the buckets of a window of equal length holding every
    bucket where it is not 0, its values there, and the outputs its window sums reach."""
    design = pspline.design(channel)[0]
    buckets = channel.buckets
    nonzero = design != 0.0
    first = nonzero.argmax(axis=0)
    length = int((buckets - nonzero[::-1].argmax(axis=0) - first).max())
    start = np.minimum(first, buckets - length)
    inputs = start[:, None] + np.arange(length)
    values = design.T[np.arange(design.shape[1])[:, None], inputs]
    return inputs, values, start[:, None] + np.arange(length + channel.window - 1)


@functools.lru_cache(maxsize=16)
def _pairs(channel: Channel) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return the spline's design, the pairs of its columns (i ≤ j) that share a bucket and
    their products per bucket (buckets, pairs): a cubic B-spline overlaps only its 3
    neighbours each side."""
    design = pspline.design(channel)[0]
    i, j = np.triu_indices(design.shape[1])
    products = design[:, i] * design[:, j]
    shared = np.flatnonzero(np.any(products != 0.0, axis=0))
    return design, i[shared], j[shared], products[:, shared]


def _centred(
    pairs: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    m: np.ndarray,
    v: np.ndarray,
) -> np.ndarray:
    """Return Σ_b v_b (d_b − m)(d_b − m)ᵀ per fit (``d_b`` the design's row of bucket b,
    ``m``: (fits, columns), ``v``: (fits, buckets)) as Dᵀ·diag(v)·D − m·uᵀ − u·mᵀ + Σv·m·mᵀ
    (u = Dᵀv), Dᵀ·diag(v)·D over the pairs of columns that share a bucket only (``pairs``)."""
    design, first, second, products = pairs
    columns = design.shape[1]
    u = v @ design
    gram = np.zeros((len(v), columns, columns))
    shared = v @ products
    gram[:, first, second] = shared
    gram[:, second, first] = shared
    gram -= m[:, :, None] * u[:, None, :] + u[:, :, None] * m[:, None, :]
    gram += v.sum(axis=1)[:, None, None] * (m[:, :, None] * m[:, None, :])
    return gram


def _convex(newton: np.ndarray) -> np.ndarray:
    """Return which of a stack of symmetric matrices are positive definite: all of them when
    a Cholesky factorization of the stack succeeds, else by their eigenvalues."""
    try:
        np.linalg.cholesky(newton)
    except np.linalg.LinAlgError:
        convex: np.ndarray = np.all(np.linalg.eigvalsh(newton) > 0, axis=1)
        return convex
    return np.ones(len(newton), dtype=bool)


def _gram(a: np.ndarray, w: np.ndarray, scratch: np.ndarray | None = None) -> np.ndarray:
    """Return a · diag(w) · aᵀ per fit (``a``: (fits, columns, points), ``w``: (fits, points),
    w ≥ 0) as b·bᵀ, b = a·diag(√w) (into ``scratch`` if given): one symmetric product."""
    b = np.multiply(a, np.sqrt(w)[:, None, :], out=scratch)
    gram: np.ndarray = b @ np.swapaxes(b, 1, 2)
    return gram


def _evaluate(
    channel: Channel, design: np.ndarray, thetas: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    z = thetas @ design.T
    x = np.exp(z - z.max(axis=1, keepdims=True))
    x /= x.sum(axis=1, keepdims=True)
    return x, np.maximum(channel.forward(x), 1e-300)


def _penalized(
    y: np.ndarray, f: np.ndarray, lam: float, pen: np.ndarray, thetas: np.ndarray
) -> np.ndarray:
    penalty = np.sum((thetas @ pen) * thetas, axis=1)
    value: np.ndarray = np.sum(y * np.log(f), axis=1) - 0.5 * lam * penalty
    return value
