"""A breakdown row's bootstrap refits: scoring steps from the row's own fits, information held.

A full refit (:func:`refits.refit`) is a P-spline search (:func:`pspline.search`): down the
grid of λ, a Fisher-scoring fit at each, every step recomputing the Fisher information F.
A grouped numeric answer of 20 rows did 21 answers' searches (issue 38: 17-20 times an
ungrouped answer). A row refits its draws y* (the same seeded draws) from its own search
instead: at each λ the row tried from ``pspline.PATIENCE`` decades above its own choice on,
from the row's fit θ_λ, ``STEPS`` Fisher-scoring steps

    θ ← θ + (F_λ + λP)⁻¹ · s_λ(θ; y*),

F_λ the information at the row's θ_λ, held, and s_λ the exact penalized score of y* (a step
that loses penalized likelihood halved, at most ``HALVINGS`` times; no coefficient moved by
more than ``MOST_MOVE`` in one step: held at a fit whose end bucket is nearly empty, an end
term's curvature is nearly 0). One step is the one-step estimator, whose spread is the
sandwich (F + λP)⁻¹F(F + λP)⁻¹ to first order; on the same 40 draws its percentiles spread
0.3-0.8 times as much as full refits', four steps' 0.7-1.0 times (three populations, n =
2,000-10,000; tests/shared/mechanisms/numeric/test_held.py pins 0.65-1.5).
Each refit then picks its λ by the same criterion (AIC: its own log-likelihood, the row's
edf at that λ) and patience as a search, so the SE carries the smoothness choice's variation
too. A refit of a piled alternative (a pile doubt, :mod:`doubt`) steps the same way from the
alternative itself at the row's λ: it lies in the spline's family (only an end term moves).
Coverage: ``python -m simulations.coverage.numeric_rows --as-row`` (simulations/README.md).
"""

from __future__ import annotations

import numpy as np

from ldp_telemetry.shared.mechanisms.numeric import pspline, spline
from ldp_telemetry.shared.mechanisms.numeric.channel import Channel

MOST_MOVE = 3.0  # the largest change of one coefficient in a step (e^3: a share × 20)
STEPS = 4  # scoring steps per refit and λ
HALVINGS = 4  # a step that loses is halved at most this many times


def refit(
    channel: Channel, anchor: pspline.Search, draws: np.ndarray
) -> list[tuple[np.ndarray, list[np.ndarray]]]:
    """Return, per row of output counts ``draws`` (all of one n), what :func:`pspline.select`
    answers (the best fit, the less smoothed fits after it), each fit one step from the
    fit at that λ of ``anchor`` (the search of the row the draws come from)."""
    y = np.atleast_2d(np.asarray(draws, dtype=float))
    design, pen = _design(channel)
    fits, scores = [], []
    first = max(anchor.best - pspline.PATIENCE, 0)  # the λ a refit may choose: near the row's
    for k in range(first, len(anchor.thetas)):
        lam = float(pspline.GRID[k])
        x, like = step(channel, design, pen, lam, anchor.thetas[k], y, STEPS)
        fits.append(x)
        scores.append(-2 * like + pspline.PRICE * anchor.edfs[k])
    table = np.array(scores)  # (λ tried, refits)
    out = []
    for i in range(len(y)):
        tried = len(table)
        for k in range(1, len(table) + 1):  # the search's patience, over those λ
            if k - 1 - int(np.argmin(table[:k, i])) >= pspline.PATIENCE:
                tried = k
                break
        best = int(np.argmin(table[:tried, i]))
        out.append((fits[best][i], [fits[j][i] for j in range(best + 1, tried)]))
    return out


def piled(
    channel: Channel,
    fitted_theta: np.ndarray,
    lam: float,
    end: int,
    share: float,
    draws: np.ndarray,
) -> np.ndarray:
    """Return one-step refits at ``lam`` of draws from the fit (coefficients ``fitted_theta``)
    with ``share`` of its values moved onto end ``end`` (0: lo, 1: hi), stepped from that
    alternative itself (its end term raised: the spline's family holds it)."""
    design, pen = _design(channel)
    x = _distribution(design, fitted_theta)
    i = -1 if end else 0
    theta = np.array(fitted_theta, dtype=float)
    raised = x[i] * (1.0 - share) + share
    theta[design.shape[1] - 2 + (1 if end else 0)] += np.log(
        raised / max(x[i] * (1 - share), 1e-300)
    )
    return step(channel, design, pen, lam, theta, np.atleast_2d(draws).astype(float), STEPS)[0]


def step(
    channel: Channel,
    design: np.ndarray,
    pen: np.ndarray,
    lam: float,
    theta: np.ndarray,
    y: np.ndarray,
    steps: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """Return each row of counts ``y``'s distribution and log-likelihood ``steps``
    Fisher-scoring steps from coefficients ``theta`` at ``lam``, the information held at
    ``theta`` (a step halved while it loses)."""
    functions = design.shape[1] - 2
    y = np.atleast_2d(y)
    n = y.sum(axis=1)
    thetas = np.tile(theta, (len(y), 1))
    x, f = _evaluate(channel, design, thetas)
    value = _penalized(y, f, lam, pen, thetas)
    pin = np.zeros(design.shape[1])
    pin[:functions] = 1.0  # a constant added to every spline coefficient changes nothing
    jacobian = channel.forward((x[0][:, None] * design).T).T - np.outer(f[0], x[0] @ design)
    info = float(n[0]) * jacobian.T @ (jacobian / f[0][:, None])
    size = np.trace(info) + 1.0
    held = info + lam * pen + (np.outer(pin, pin) + 1e-9 * np.eye(len(pin))) * size
    for _ in range(steps):
        h = channel.backward(y / f)
        score = (x * (h - n[:, None])) @ design - lam * thetas @ pen
        moves = np.linalg.solve(held, score.T).T
        largest = np.maximum(np.abs(moves).max(axis=1, keepdims=True), 1e-300)
        moves *= np.minimum(1.0, MOST_MOVE / largest)
        rows = np.arange(len(y))
        for _ in range(HALVINGS):  # a step that loses is halved (rarely: it is a scoring step)
            moved = thetas[rows] + moves[rows]
            x2, f2 = _evaluate(channel, design, moved)
            value2 = _penalized(y[rows], f2, lam, pen, moved)
            up = value2 >= value[rows]
            took = rows[up]
            thetas[took], x[took], f[took], value[took] = moved[up], x2[up], f2[up], value2[up]
            rows = rows[~up]
            if not len(rows):
                break
            moves[rows] /= 2
    return x, np.sum(y * np.log(f), axis=1)


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


def _design(channel: Channel) -> tuple[np.ndarray, np.ndarray]:
    functions = min(pspline.FUNCTIONS, channel.buckets)
    return spline.basis(channel.buckets, functions), pspline.penalty(functions)


def _distribution(design: np.ndarray, theta: np.ndarray) -> np.ndarray:
    z = design @ theta
    x = np.exp(z - z.max())
    return x / x.sum()
