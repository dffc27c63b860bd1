"""A breakdown row's Square Wave answer: the same refit searches, side by side (issue 38)."""

from __future__ import annotations

import numpy as np
import pytest

from ldp_telemetry.shared.mechanisms.numeric import ems, held, pspline, refits
from ldp_telemetry.shared.mechanisms.numeric import estimate as est
from ldp_telemetry.shared.mechanisms.numeric.channel import Channel
from ldp_telemetry.shared.mechanisms.numeric.mechanism import NumericSums, SquareWave
from ldp_telemetry.shared.mechanisms.numeric.shape import percentile, pile_shares

SW = SquareWave(epsilon=2.0, lo=0.0, hi=100.0, buckets=128, scale="linear")


def sums_of(values: np.ndarray, rng: np.random.Generator) -> NumericSums:
    sums = SW.new_sums()
    sums.add_many(SW.privatize_many(values, rng))
    return sums


def lognormal(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.clip(np.exp(rng.normal(np.log(30.0), 0.4, n)), 0.0, 100.0)


def test_a_row_keeps_the_fit_and_is_the_same_for_the_same_sums() -> None:
    rng = np.random.default_rng(38)
    sums = sums_of(lognormal(rng, 3_000), rng)
    full = SW.estimate(sums).rows()
    row, again = (SW.estimate_rows([sums])[0].rows() for _ in range(2))
    assert row == again  # the refits are seeded by the row's counts
    assert [r["estimate"] for r in row] == [r["estimate"] for r in full]  # the same fit
    for mine, theirs in zip(row, full, strict=True):
        assert mine["std_error"] == pytest.approx(theirs["std_error"], rel=0.35)
        assert "reliable" in mine


def test_rows_estimated_together_equal_each_alone() -> None:
    rng = np.random.default_rng(7)
    many = [sums_of(lognormal(rng, n), rng) for n in (500, 2_000)] + [SW.new_sums()]
    together = [r.rows() for r in SW.estimate_rows(many)]
    alone = [SW.estimate_rows([sums])[0].rows() for sums in many]
    assert together == alone
    assert all(row["reliable"] is False for row in together[2])  # no reports


@pytest.mark.parametrize("seed", [1, 2])
def test_a_rows_refits_are_the_full_searches_of_the_same_draws(seed: int) -> None:
    # Values piled at both ends (5 % clipped each way, eps = 1 over 64 buckets): where four
    # held steps under-varied (a p95 spread 0.1-0.3 times a full search's), the row's
    # searches reach the same fits as full ones for most draws, so their percentiles and
    # piles spread alike near both ends and their λ searches stop alike.
    sw = SquareWave(epsilon=1.0, lo=0.0, hi=100.0, buckets=64, scale="linear")
    rng = np.random.default_rng(seed)
    sums = sw.new_sums()
    sums.add_many(sw.privatize_many(np.clip(rng.uniform(-5.5, 105.5, 2_000), 0.0, 100.0), rng))
    counts = np.asarray(sums.table[0], dtype=float)
    fitted = pspline.select(sw.channel, counts)[0]
    key = counts.astype("<i8").tobytes()
    full = refits.refit(sw.channel, fitted, 2_000, key, refits.BOOTSTRAP)
    row = refits.refit(sw.channel, fitted, 2_000, key, refits.BOOTSTRAP, row=True)
    for q in (0.02, 0.05, 0.5, 0.95, 0.98):
        a = np.array([percentile(best, q) for best, _ in full])
        b = np.array([percentile(best, q) for best, _ in row])
        assert 0.85 < np.std(b, ddof=1) / np.std(a, ddof=1) < 1.15, q
        assert np.median(np.abs(a - b)) < 0.05 * np.std(a, ddof=1), q
    piles = [pile_shares(np.array([best for best, _ in fits]), 1) for fits in (full, row)]
    ratio = np.std(piles[1], axis=0, ddof=1) / np.std(piles[0], axis=0, ddof=1)
    assert np.all((ratio > 0.85) & (ratio < 1.15))
    assert np.mean([len(a) == len(b) for (_, a), (_, b) in zip(full, row, strict=True)]) >= 0.75


def test_the_totals_never_take_a_rows_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # The totals' answer is the full one (bit for bit main's: the refits are full
    # searches), and an EMS screen made in one EM with others answers as one made alone.
    rng = np.random.default_rng(11)
    sums = sums_of(lognormal(rng, 2_000), rng)
    before = SW.estimate(sums).rows()

    def refused(*_: object) -> None:
        raise AssertionError("the totals took a row's refits")

    monkeypatch.setattr(held, "refit", refused)
    assert SW.estimate(sums).rows() == before
    counts = np.asarray(sums.table[0])
    other = np.asarray(sums_of(lognormal(rng, 500), rng).table[0])
    screen = ems.ems(SW.channel, np.array([other, counts], dtype=float))[1]
    screened = est.answer(
        SW.channel, counts, est.DEFAULT_QUERY, SW.to_value, True, 0.95, screen=screen
    )
    assert screened.rows() == before


def test_a_rows_intervals_hold_its_truth() -> None:
    # 12 seeded rows of 2,000 devices: the median's SE against its estimates' spread, and
    # its intervals against the truth (python -m simulations.coverage.numeric_rows
    # --as-row measures it at length).
    rng = np.random.default_rng(2026)
    truth = np.median(lognormal(np.random.default_rng(0), 1_000_000))
    many = [sums_of(lognormal(rng, 2_000), rng) for _ in range(12)]
    found = [(rows.estimate[0], rows.std_error[0]) for rows in SW.estimate_rows(many, ["p50"])]
    estimates, errors = (np.array(column) for column in zip(*found, strict=True))
    ratio = np.sqrt(np.mean(errors**2)) / np.std(estimates, ddof=1)
    assert 0.75 < ratio < 1.6
    assert np.sum(np.abs(estimates - truth) <= 1.96 * errors) >= 10


def test_a_steps_pieces_are_their_definitions() -> None:
    # held.converge's Newton step, built from sparse pieces (issue 38, rows-cheap): each equal
    # to its dense definition, for fits with emptied ends too.
    rng = np.random.default_rng(38)
    for sw in (SW, SquareWave(epsilon=1.0, lo=0.0, hi=100.0, buckets=6, scale="linear")):
        channel = sw.channel
        design = pspline.design(channel)[0]
        thetas = rng.normal(size=(7, design.shape[1])) * 2.0
        thetas[:3, -2:] = -700.0  # end buckets emptied: shares of e^-700
        x, f = held._evaluate(channel, design, thetas)
        m = x @ design
        dense = (
            np.einsum("fb,bc,ob->fco", x, design, channel.dense()) - f[:, None, :] * m[..., None]
        )
        jacobian = held._jacobian(channel, design, x, f)
        assert np.allclose(jacobian, dense, rtol=1e-12, atol=1e-15)
        buffer = np.full((9, *jacobian.shape[1:]), np.nan)
        assert np.array_equal(held._jacobian(channel, design, x, f, buffer[:7]), jacobian)
        v = rng.normal(size=x.shape) * x
        centred = design[None] - m[:, None, :]
        direct = np.einsum("fbc,fb,fbd->fcd", centred, v, centred)
        pieces = held._centred(held._pairs(channel), m, v)
        assert np.allclose(pieces, direct, rtol=1e-12, atol=1e-14 * np.abs(direct).max())
    stacks = rng.normal(size=(50, 6, 6))
    symmetric = stacks @ np.swapaxes(stacks, 1, 2) - rng.uniform(
        0.0, 3.0, size=(50, 1, 1)
    ) * np.eye(6)
    truth = np.all(np.linalg.eigvalsh(symmetric) > 0, axis=1)
    assert 0 < truth.sum() < 50
    assert np.array_equal(held._convex(symmetric), truth)
    assert np.all(held._convex(symmetric[truth]))


def newton_as_before(
    channel: Channel, lam: float, theta: np.ndarray, y: np.ndarray
) -> tuple[np.ndarray, ...]:
    """held.converge's Newton steps as first built (main db766cf): every piece dense."""
    design, pen = pspline.design(channel)
    functions = design.shape[1] - 2
    n, thetas = y.sum(axis=1), np.array(theta, dtype=float)
    x, f = held._evaluate(channel, design, thetas)
    value = held._penalized(y, f, lam, pen, thetas)
    pin = np.r_[np.ones(functions), 0.0, 0.0]
    pinned = np.outer(pin, pin) + 1e-9 * np.eye(len(pin))
    info = np.zeros((len(y), len(pin), len(pin)))
    rows = np.arange(len(y))
    for _ in range(pspline.STEPS):
        if not len(rows):
            break
        xs, fs = x[rows], f[rows]
        h = channel.backward(y[rows] / fs)
        score = (xs * (h - n[rows, None])) @ design - lam * thetas[rows] @ pen
        m = xs @ design
        jacobian = (
            np.einsum("fb,bc,ob->fco", xs, design, channel.dense()) - fs[:, None] * m[..., None]
        )
        info[rows] = n[rows, None, None] * np.einsum("fco,fo,fdo->fcd", jacobian, 1 / fs, jacobian)
        centred = design[None] - m[:, None, :]
        curvature = np.einsum("fco,fo,fdo->fcd", jacobian, y[rows] / fs**2, jacobian) - np.einsum(
            "fbc,fb,fbd->fcd", centred, xs * (h - n[rows, None]), centred
        )
        ridge = lam * pen + pinned * (np.trace(info[rows], axis1=1, axis2=2) + 1.0)[:, None, None]
        convex = np.all(np.linalg.eigvalsh(curvature + ridge) > 0, axis=1)
        total = np.where(convex[:, None, None], curvature, info[rows]) + ridge
        moves = np.linalg.solve(total, score[..., None])[..., 0]
        rows = rows[held._climb(channel, design, pen, lam, y, n, rows, moves, thetas, x, f, value)]
    for i in rows:  # stopped by the step limit
        xs, fs = x[i : i + 1], f[i : i + 1]
        m = xs @ design
        jacobian = (
            np.einsum("fb,bc,ob->fco", xs, design, channel.dense()) - fs[:, None] * m[..., None]
        )
        info[i] = n[i] * np.einsum("fco,fo,fdo->fcd", jacobian, 1 / fs, jacobian)[0]
    return x, thetas, pspline.edf(info, lam * pen, functions)


@pytest.mark.parametrize("lam", [1e3, 1.0])
def test_a_rows_newton_steps_answer_as_before(lam: float) -> None:
    # The sparse, buffered step (rows-cheap) reaches the fits the dense one reached, to
    # 1e-9: values piled at both ends (empty and full end buckets), one start for all draws.
    sw = SquareWave(epsilon=1.0, lo=0.0, hi=100.0, buckets=64, scale="linear")
    rng = np.random.default_rng(39)
    truth = np.r_[0.05, np.full(62, 0.9 / 62), 0.05]  # 5 % clipped at each end
    outputs = sw.channel.forward(truth)
    y = rng.multinomial(2_000, outputs / outputs.sum(), size=12).astype(float)
    start = np.tile(pspline.search(sw.channel, 2_000 * outputs).thetas[0], (12, 1))
    design, pen = pspline.design(sw.channel)
    x, _, thetas, edf = held.converge(sw.channel, design, pen, lam, start, y)
    before = newton_as_before(sw.channel, lam, start, y)
    for now, then in zip((x, thetas, edf), before, strict=True):
        assert np.allclose(now, then, rtol=1e-9, atol=1e-12)
