"""What a numeric task's estimates are: the reconstructed distribution and its statistics.

Square Wave reports are turned back into a distribution over the task's input buckets by
maximum likelihood on the exact channel P(output | bucket), the log of the distribution a
penalized cubic spline whose smoothness a criterion chooses (:mod:`pspline`). From it come
percentiles (:mod:`shape`, :mod:`statistics`: even inside a bucket, an end bucket's excess at
the range's end), the histogram and, on a log scale, the mean. The fit has no closed-form
variance: standard errors come from a parametric bootstrap (:mod:`refits`), ``BOOTSTRAP``
multinomial resamples of n reports from the fitted output distribution, each reconstructed by
the same procedure, smoothness chosen afresh (seeded by the counts, so the same sums always
give the same answer). Resampling n reports from the fitted outputs is drawing n devices from
the fitted distribution, so every numeric SE is that of a statistic of the distribution the
devices' values are drawn from. A statistic is answered ``reliable: false`` with the reason
when the refits move it by more than ``BIAS_LIMIT`` SE, when a less smoothed fit moves it by
more than ``SHAPE_LIMIT`` SE and further than such fits move the refits' (a shape the chosen
fit could not take), or when :mod:`doubt` doubts it (a percentile in a gap between modes or
near values piled at the range's end, a mean of values in one bucket). Whether the values
concentrate about as tightly as Square Wave resolves is judged as before the spline, on an EMS
fit (EM with smoothing, Li et al., SIGMOD 2020) against EMS's fit of one repeated value: the
thresholds were set on it (``python -m simulations coverage``). Two statistics need no
reconstruction and are unbiased in closed form: the mean on a linear scale (the mean output
index is linear in the bucket) and the end buckets' shares. A percentile's SE is the refits'
spread where the buckets are equal (unit space), taken to the task's units through the scale's
slope, and the smoothing's bias: how far the percentile moves in the less smoothed fits the
search tried, less the refits' own such moves' noise (:func:`statistics.smoothing_error`),
added in quadrature; in a tail, the refits' spread is first raised to what Square Wave
resolves of the tail's density (:func:`statistics.resolved_error`: fits put a lognormal's p95
on a tail up to 2.7 times too steep, and their refits spread by half the answers'). The refits
are drawn from the smoothed fit, so their spread cannot show how far the smoothing pulls an
answer off a shape it flattened (a lognormal median at ε = 1 over 128 buckets: +0.9 SE off,
issue 39; simulations/README.md). The grid's smallest λ (all but unpenalized) bounded it too,
but its noise made a log-scale uniform's p50 SE 2.4 times the answers' spread. The flags are
judged on the refits' SE alone, as they were set. Intervals are estimate ± z·SE.

A query names what it wants: ``mean``, ``pNN`` (a percentile, e.g. ``p50``, ``p99.9``),
``histogram`` (one row per bucket, ``[lo, hi)`` in the task's units, its estimated count)
or ``first_bucket`` / ``last_bucket`` (the share of values in the first / last bucket,
those clipped below lo / above hi included: the reports cannot tell the two apart).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ldp_telemetry.shared.answers import EstimateRow
from ldp_telemetry.shared.errors import ParameterError
from ldp_telemetry.shared.estimates import Estimates
from ldp_telemetry.shared.mechanisms.numeric import ems as yardstick
from ldp_telemetry.shared.mechanisms.numeric import pspline
from ldp_telemetry.shared.mechanisms.numeric.channel import Channel
from ldp_telemetry.shared.mechanisms.numeric.doubt import (
    bucket_matters,
    concentrated_mean,
    percentile_doubt,
    placement_doubt,
)
from ldp_telemetry.shared.mechanisms.numeric.refits import (
    piled_refits,
    replicates,
    shape_move,
    unit_spread,
)
from ldp_telemetry.shared.mechanisms.numeric.shape import concentrated
from ldp_telemetry.shared.mechanisms.numeric.statistics import (
    PERCENTILE,
    placement_shift,
    resolved_error,
    smoothing_error,
    statistics,
)

SPIKE_REPORTS = 10_000  # the single value's reconstruction: of expected counts of this many
# The reconstruction's bias, as the bootstrap measures it at the fit: a statistic it moves
# by more than this many SEs is flagged unreliable (set when EMS reconstructed, kept). It
# is not subtracted: with EMS the corrected estimate varied more than the refits (SE/SD
# 0.75 for a uniform population's p90-p99), and the bias at the fit underestimates the
# bias at a sharper truth anyway (measured with 40 refits, the bias itself is uncertain
# by about 0.16 SE).
BIAS_LIMIT = 0.6
# A statistic a less smoothed fit moves by more than SHAPE_LIMIT SE, and by more than
# SHAPE_Z of the refits' own spread of that move from its mean, is flagged: at eps = 1,
# n = 10^4 a linear-scale lognormal's p90/p95 came out 0.8-1 SE low, its p50 high.
SHAPE_LIMIT, SHAPE_Z = 0.6, 2.0
DEFAULT_QUERY = ("mean", "p50", "p75", "p90", "p95", "p99", "first_bucket", "last_bucket")
RENAMED = {"clipped_low": "first_bucket", "clipped_high": "last_bucket"}
NAMES = "mean, pNN (e.g. p50, p99.9), histogram, first_bucket, last_bucket"


def parse_query(raw: object, percentiles_only_from_distribution: bool) -> list[str] | None:
    """Return the statistics a query names (None: the default), or raise ParameterError."""
    if raw is None:
        return None
    if not isinstance(raw, list) or not raw or not all(isinstance(c, str) for c in raw):
        raise ParameterError(f"candidates must be a non-empty list among: {NAMES}")
    for name in raw:
        if name in ("mean", "histogram", "first_bucket", "last_bucket") or PERCENTILE.match(name):
            if name != "mean" and not percentiles_only_from_distribution:
                raise ParameterError(
                    f"this task's method estimates the mean only, not {name!r} (use method sw)"
                )
            continue
        if name in ("clipped_low", "clipped_high"):
            raise ParameterError(
                f"{name} is now {RENAMED[name]}: the share of the end bucket, values clipped "
                "to the range included (the reports cannot tell them apart)"
            )
        raise ParameterError(f"unknown statistic {name[:32]!r}; ask for: {NAMES}")
    return list(raw)


@dataclass(frozen=True)
class NumericEstimates(Estimates):
    """Estimates that say, per row, whether their interval can be trusted and why not."""

    reliable: tuple[bool, ...]
    reasons: tuple[str | None, ...]

    def rows(self) -> list[EstimateRow]:
        """Return one JSON-ready dict per statistic, with ``reliable`` and any ``reason``."""
        rows = super().rows()
        for row, flag, reason in zip(rows, self.reliable, self.reasons, strict=True):
            row["reliable"] = flag
            if reason is not None:
                row["reason"] = reason
        return rows


# Below this many reports every SE is a plug-in from too few outputs (one report: the
# bootstrap redraws it alone and the closed forms see a share of 0 or 1, so SE 0).
FEW_REPORTS = 30


def flagged(base: Estimates, reasons: Sequence[str | None]) -> NumericEstimates:
    """Return ``base`` with a reason per row (None: reliable); with fewer than FEW_REPORTS
    reports every row is unreliable."""
    if 0 < base.n < FEW_REPORTS:
        few = f"only {base.n} reports: a standard error from fewer than {FEW_REPORTS} is not one"
        reasons = [few if r is None else r for r in reasons]
    return NumericEstimates(
        values=base.values,
        estimate=base.estimate,
        std_error=base.std_error,
        ci_low=base.ci_low,
        ci_high=base.ci_high,
        n=base.n,
        level=base.level,
        reliable=tuple(r is None for r in reasons),
        reasons=tuple(reasons),
    )


def nothing(
    names: Sequence[str], buckets: int, to_value: Callable[[np.ndarray], np.ndarray], level: float
) -> NumericEstimates:
    """Return the answer to a query over no reports: every row 0 and unreliable."""
    uniform = np.full(buckets, 1.0 / buckets)
    rows = [row for row, _ in statistics(uniform, names, 0, to_value)]
    zeros = np.zeros(len(rows))
    base = Estimates.from_variance(rows, zeros, zeros, 0, level)
    return flagged(base, ["no reports"] * len(rows))


def reconstruct(channel: Channel, counts: np.ndarray) -> np.ndarray:
    """Return the bucket distribution fitted to output ``counts`` (:mod:`pspline`)."""
    return pspline.select(channel, np.asarray(counts, dtype=float))[0]


def index_mean(channel: Channel, counts: np.ndarray) -> tuple[float, float]:
    """Return the mean bucket index and its standard error, unbiased and in closed form.

    E[o | i] = far·Σo + (near − far)·window·(i + w) is linear in i, so the mean output
    index, debiased, is the mean bucket: no reconstruction, no smoothing bias.
    """
    n = counts.sum()
    o = np.arange(channel.outputs)
    mean_o = float(counts @ o) / n
    variance_o = float(counts @ (o - mean_o) ** 2) / max(n - 1, 1)
    slope = (channel.near - channel.far) * channel.window
    half = (channel.window - 1) / 2
    constant = channel.far * channel.outputs * (channel.outputs - 1) / 2
    return (mean_o - constant) / slope - half, float(np.sqrt(variance_o / n)) / slope


def answer(
    channel: Channel,
    counts: np.ndarray,
    names: Sequence[str],
    to_value: Callable[[np.ndarray], np.ndarray],
    linear: bool,
    level: float,
    *,
    row: bool = False,
    screen: np.ndarray | None = None,
) -> NumericEstimates:
    """Answer each statistic asked of Square Wave output ``counts``.

    A linear scale's mean and the end buckets' shares are unbiased in closed form. Every
    other statistic is read off the log-spline fit, its SE from the bootstrap's full
    refits, and flagged by :func:`moved` (the refits' bias; the move of a less smoothed
    fit), by concentration judged on an EMS fit, or by :func:`doubt.percentile_doubt`.
    ``row``: a breakdown's row, whose refits (the bootstrap's and a pile doubt's) are the
    same searches of the same draws, run side by side and warm-started (:mod:`held`): the
    same fit, statistics and tests, at a fraction of the cost. ``screen``: the counts' EMS
    fit, if already made (:func:`answer_rows`). A query only of closed-form statistics
    (a linear scale's mean, the end buckets' shares) fits no spline and draws no refits:
    the same rows, at the cost of the EMS screen if a mean is asked.
    """
    counts = np.asarray(counts)
    n = int(counts.sum())
    if names and all(has_closed_form(name, linear) for name in names):  # no fit, no refits
        return closed_form_answer(channel, counts, names, to_value, level, screen)
    fitted, sharper = pspline.select(channel, counts.astype(float))
    rows = statistics(fitted, names, n, to_value)

    def measure(distribution: np.ndarray) -> np.ndarray:
        return np.array([v for _, v in statistics(distribution, names, n, to_value)])

    boot, refits, null = replicates(channel, fitted, n, measure, counts, row)
    piled = functools.partial(piled_refits, channel, fitted, n, counts, row=row)
    errors = np.std(boot, axis=0, ddof=1)
    values = np.array([v for _, v in rows])
    bias = np.mean(boot, axis=0) - values
    shape = shape_move(values, sharper, measure)
    usual = np.abs(shape - np.mean(null, axis=0)) <= SHAPE_Z * np.std(null, axis=0, ddof=1)
    screen = yardstick.ems(channel, counts) if screen is None else screen
    peak = yardstick.single_value_peak(channel)
    crowded = concentrated(screen, peak)  # the same for every percentile
    half_window = (channel.window - 1) / (2 * channel.buckets)  # Square Wave's b, unit space
    reasons: list[str | None] = []
    for j, (label, _) in enumerate(rows):
        unbiased = closed_form(channel, counts, label, to_value, linear)
        if unbiased is not None:
            values[j], errors[j] = unbiased
            mean = label == "mean"
            reasons.append(concentrated_mean(screen, peak, to_value, errors[j]) if mean else None)
            continue
        q = float(label[1:]) / 100 if PERCENTILE.match(label) else None
        if q is not None:  # spread measured where the buckets are equal (log: the delta method)
            errors[j], bias[j] = unit_spread(fitted, refits, q, to_value)
        reason = moved(bias[j], 0.0 if usual[j] else shape[j], errors[j])
        if reason is None and label == "mean":  # a log scale's: read off the fit
            reason = concentrated_mean(screen, peak, to_value, errors[j])
        if reason is None and not linear:
            reason = placement_doubt(placement_shift(fitted, label, values[j], to_value), errors[j])
        if reason is None and q is not None:
            reason = crowded or percentile_doubt(
                fitted, refits, q, spline_peak(channel), channel.window, piled
            )
        if q is not None:  # after the flags: a tail as long as resolved, the smoothing's bias
            least = resolved_error(errors[j], fitted, refits, q, half_window)
            errors[j] = smoothing_error(least, shape[j], null[:, j])
        reasons.append(reason)
    base = Estimates.from_variance([r for r, _ in rows], values, errors**2, n, level)
    return flagged(base, reasons)


def answer_rows(
    channel: Channel,
    many: Sequence[np.ndarray],
    names: Sequence[str],
    to_value: Callable[[np.ndarray], np.ndarray],
    linear: bool,
    level: float,
) -> list[NumericEstimates]:
    """Answer each of a breakdown's rows (output counts ``many``, none empty) as
    :func:`answer` does a row, their EMS screens fitted in one EM (each the same as alone:
    every row stops on its own gain)."""
    if not many:
        return []
    if all(has_closed_form(name, linear) for name in names):  # screens only where needed
        return [closed_form_answer(channel, counts, names, to_value, level) for counts in many]
    screens = np.atleast_2d(yardstick.ems(channel, np.array(many, dtype=float)))
    return [
        answer(channel, counts, names, to_value, linear, level, row=True, screen=screen)
        for counts, screen in zip(many, screens, strict=True)
    ]


def closed_form_answer(
    channel: Channel,
    counts: np.ndarray,
    names: Sequence[str],
    to_value: Callable[[np.ndarray], np.ndarray],
    level: float,
    screen: np.ndarray | None = None,
) -> NumericEstimates:
    """Answer a query of closed-form statistics only (:func:`has_closed_form`, a linear
    scale) with the rows :func:`answer` gives them. The EMS ``screen`` (fitted here when
    None) is needed only for a mean whose SE is small against half a bucket."""
    found = [closed_form(channel, counts, name, to_value, True) for name in names]
    values = np.array([value for value, _ in filter(None, found)])
    errors = np.array([error for _, error in filter(None, found)])
    half = float(to_value(np.array([1.0]))[0] - to_value(np.array([0.0]))[0]) / channel.buckets / 2
    reasons: list[str | None] = [None] * len(names)
    for j, name in enumerate(names):
        if name == "mean" and bucket_matters(half, errors[j]):
            screen = yardstick.ems(channel, counts) if screen is None else screen
            peak = yardstick.single_value_peak(channel)
            reasons[j] = concentrated_mean(screen, peak, to_value, errors[j])
    n = int(counts.sum())
    return flagged(Estimates.from_variance(list(names), values, errors**2, n, level), reasons)


def moved(bias: float, shape: float, error: float) -> str | None:
    """Return why a statistic the reconstruction moves by more than its limits misleads, or None.

    ``bias``: how far the refits move it from the fit; ``shape``: how far the fit with
    one more spline function moves it (a shape the chosen fit could not take).
    """
    error = max(error, 1e-300)
    if not abs(bias) <= BIAS_LIMIT * error:
        return (
            f"the reconstruction moves this statistic by {bias / error:+.1f} standard errors "
            "(a point mass, a gap or an empty tail)"
        )
    if not abs(shape) <= SHAPE_LIMIT * error:
        return (
            f"a reconstruction free to take one more bend moves it by {shape / error:+.1f} "
            "standard errors: its value depends on a shape the reports barely tell"
        )
    return None


@functools.lru_cache(maxsize=64)
def spline_peak(channel: Channel) -> float:
    """Return the largest share the log-spline fit of ``SPIKE_REPORTS`` reports of one
    value (their expected counts) puts in one bucket."""
    return float(
        reconstruct(
            channel, channel.forward(yardstick.spike(channel.buckets)) * SPIKE_REPORTS
        ).max()
    )


def has_closed_form(name: str, linear: bool) -> bool:
    """Return whether statistic ``name`` is answered in closed form (:func:`closed_form`)."""
    return (name == "mean" and linear) or name in ("first_bucket", "last_bucket")


def closed_form(
    channel: Channel,
    counts: np.ndarray,
    name: str,
    to_value: Callable[[np.ndarray], np.ndarray],
    linear: bool,
) -> tuple[float, float] | None:
    """Return (estimate, SE) of a statistic unbiased in closed form, or None for the others.

    Output 0 is near only for the first bucket and output D − 1 only for the last, so
    P(o = 0) = far + (near − far)·share of the first bucket: debiased like rr.
    """
    if not has_closed_form(name, linear):
        return None
    n = counts.sum()
    if name == "mean":
        index, error = index_mean(channel, counts)
        width = float(to_value(np.array([1.0]))[0] - to_value(np.array([0.0]))[0])
        centre = float(to_value(np.array([(index + 0.5) / channel.buckets]))[0])
        return centre, error * width / channel.buckets
    count = counts[0 if name == "first_bucket" else -1]
    gap = channel.near - channel.far
    # The SE from the share with two reports added each way (Agresti and Coull 1998):
    # an end output is rare (about 14 of 10^4 reports at eps = 2 over 256 log buckets),
    # and the plug-in SE, small exactly when the count is, gave z -0.16 and 92.6 %
    # coverage over 1,000 runs; this one -0.13 and 95.3 %. The estimate stays unbiased.
    smoothed = (count + 2) / (n + 4)
    return (count / n - channel.far) / gap, float(
        np.sqrt(smoothed * (1 - smoothed) / (n + 4))
    ) / gap
