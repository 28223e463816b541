"""Change points in a series of results by version: where the level stepped, and by how much.

Binary segmentation (Scott & Knott 1974, "A cluster analysis method for grouping means in the
analysis of variance", Biometrics 30(3); Vostrikova 1981, "Detecting disorder in
multidimensional random processes", Soviet Math. Dokl. 24) with a two-sample t test at the split
that maximises |t|: the noise is learned from the series itself (the pooled spread on both sides
of the split), and the p-value of that best split is multiplied by the number of splits tried
(Bonferroni), so trying every split does not inflate the false alarm rate. Deterministic: the
same series always gives the same answer. A permutation test of the maximum (as in E-divisive
means, Matteson & James 2014, JASA 109(505)) was tried first: it found the same steps in the
synthetic series of tests/unit/test_changepoints.py, but with a handful of versions it cannot
reach a small p-value at all (4 versions on each side have only 70 orderings), which is
exactly where a history starts; docs/performance.md compares both with Apache Otava.

With each value's standard error (``standard_errors``: a history's points are experiments, each
with an interval from its own rounds), the split is tested with what the experiments know
rather than with the spread of a handful of values. A t test on six values has four degrees
of freedom: at alpha 0.001 it needs |t| > 8.6, and it missed a 10 % step of wall time over six
versions that every experiment's interval showed plainly. The intervals test is the
random-effects comparison of the two sides' weighted means (DerSimonian & Laird 1986,
"Meta-analysis in clinical trials", Controlled Clinical Trials 7(3)): each value weighs
1 / (se^2 + tau^2), where tau^2 is the between-experiment variance beyond what the intervals
explain, estimated from the scatter within the two sides (the method of moments, never below
0), so that experiments that drift apart more than their intervals say (a busy evening, a
neighbour on the machine) widen the test instead of passing for a step. The statistic is
normal; the p-value of the best split is again multiplied by the number of splits.

A step is reported with its place (the index of the first value after it), its size (the mean
after minus the mean before, between the neighbouring change points), the size relative to the
mean before, a t interval for the size, and its p-value.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cutaway.stats.descriptive import as_vector

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class ChangePoint:
    """A step between ``index - 1`` and ``index`` of the series."""

    index: int
    before: float  # mean of the segment before (from the previous change point)
    after: float  # mean of the segment after (to the next change point)
    size: float  # after - before, in the series' unit
    relative: float  # size / before (NaN when before is 0)
    ci_low: float  # t interval for the size
    ci_high: float
    p_value: float  # permutation p-value when the step was found


@dataclass(frozen=True)
class Segmentation:
    change_points: tuple[ChangePoint, ...]
    noise_sd: float  # pooled standard deviation within the segments
    # Whether the splits were tested with the values' own standard errors (see the module).
    from_intervals: bool = False


# A standard error below this share of its value is taken as this share: a deterministic
# metric (counted instructions) has an interval of zero width, and a weight must stay finite.
_SMALLEST_RELATIVE_ERROR = 1e-6


def change_points(
    values: npt.ArrayLike,
    *,
    alpha: float = 0.001,
    min_segment: int = 3,
    confidence: float = 0.95,
    standard_errors: npt.ArrayLike | None = None,
) -> Segmentation:
    """The change points of ``values`` in order (see the module docstring). A segment is split
    when the (Bonferroni) p-value of its largest statistic is at most ``alpha``: the t
    statistic, or with ``standard_errors`` (one per value, from each value's own interval) the
    random-effects z statistic. Each side keeps at least ``min_segment`` values (at least 2,
    so that each has a spread)."""
    data = as_vector(values)
    if not np.all(np.isfinite(data)):
        raise ValueError("change points need finite values")
    errors = None
    if standard_errors is not None:
        errors = as_vector(standard_errors)
        if errors.shape != data.shape or not np.all(np.isfinite(errors)) or np.any(errors < 0):
            raise ValueError("standard errors must be finite, not negative, one per value")
        errors = np.maximum(errors, np.abs(data) * _SMALLEST_RELATIVE_ERROR)
        if np.any(errors == 0.0):  # a value of exactly 0 with no spread: no weight to give
            errors = None
    if min_segment < 2:
        raise ValueError(f"min_segment must be at least 2, got {min_segment}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    found: dict[int, float] = {}
    pending = [(0, int(data.size))]
    while pending:
        start, stop = pending.pop()
        split = (
            _best_split(data[start:stop], min_segment)
            if errors is None
            else _best_weighted_split(data[start:stop], errors[start:stop], min_segment)
        )
        if split is None or split[1] > alpha:
            continue
        index = start + split[0]
        found[index] = split[1]
        pending += [(start, index), (index, stop)]
    bounds = [0, *sorted(found), int(data.size)]
    points = tuple(
        _describe_step(data, bounds[i - 1], bounds[i], bounds[i + 1], found[bounds[i]], confidence)
        for i in range(1, len(bounds) - 1)
    )
    return Segmentation(points, _pooled_sd(data, bounds), from_intervals=errors is not None)


def _best_weighted_split(
    segment: FloatArray, errors: FloatArray, min_segment: int
) -> tuple[int, float] | None:
    """(split, p-value) of the largest random-effects |z| in ``segment`` (see the module), or
    None if too short: the two-sided normal p-value times the number of splits tried."""
    from cutaway.stats.distributions import norm_sf

    n = int(segment.size)
    if n < 2 * min_segment:
        return None
    scores = [
        _weighted_z(segment[:k], errors[:k], segment[k:], errors[k:])
        for k in range(min_segment, n - min_segment + 1)
    ]
    best = int(np.argmax(scores))
    z = scores[best]
    if math.isinf(z):
        return best + min_segment, 0.0
    splits = n - 2 * min_segment + 1
    return best + min_segment, min(1.0, splits * 2.0 * norm_sf(z))


def _weighted_z(
    left: FloatArray, left_errors: FloatArray, right: FloatArray, right_errors: FloatArray
) -> float:
    """|z| of the difference between the sides' random-effects means; tau^2 by the method of
    moments from the heterogeneity within the two sides (DerSimonian & Laird 1986)."""
    heterogeneity, scale = 0.0, 0.0
    for values, errors in ((left, left_errors), (right, right_errors)):
        weights = 1.0 / errors**2
        mean = float((weights * values).sum() / weights.sum())
        heterogeneity += float((weights * (values - mean) ** 2).sum())
        scale += float(weights.sum() - (weights**2).sum() / weights.sum())
    degrees = left.size + right.size - 2
    tau_squared = max(0.0, (heterogeneity - degrees) / scale) if scale > 0 else 0.0
    means, variances = [], []
    for values, errors in ((left, left_errors), (right, right_errors)):
        weights = 1.0 / (errors**2 + tau_squared)
        means.append(float((weights * values).sum() / weights.sum()))
        variances.append(1.0 / float(weights.sum()))
    difference = abs(means[1] - means[0])
    spread = math.sqrt(variances[0] + variances[1])
    if spread == 0.0:
        return math.inf if difference > 0 else 0.0
    return difference / spread


def _best_split(segment: FloatArray, min_segment: int) -> tuple[int, float] | None:
    """(split, p-value) of the largest |t| in ``segment``, or None if too short: the two-sided
    Student t p-value of that split times the number of splits tried (Bonferroni), which
    bounds the chance that pure noise gives so large a maximum."""
    from cutaway.stats.distributions import t_sf

    n = int(segment.size)
    if n < 2 * min_segment:
        return None
    _, every = _max_t(segment[np.newaxis, :], min_segment)
    best = int(np.argmax(every))
    t = float(every[best])
    if math.isinf(t):
        return best + min_segment, 0.0
    splits = n - 2 * min_segment + 1
    return best + min_segment, min(1.0, splits * 2.0 * t_sf(t, n - 2))


def _max_t(rows: FloatArray, min_segment: int) -> tuple[FloatArray, FloatArray]:
    """For each row, the largest pooled two-sample |t| over splits k in [min_segment,
    n - min_segment] and the |t| of every split (of the first row, for the observed series)."""
    n = rows.shape[1]
    centred = rows - rows.mean(axis=1, keepdims=True)  # keeps the sums of squares exact
    sums = np.cumsum(centred, axis=1)
    squares = np.cumsum(centred * centred, axis=1)
    k = np.arange(min_segment, n - min_segment + 1)
    left_sum, left_sq = sums[:, k - 1], squares[:, k - 1]
    right_sum, right_sq = sums[:, -1:] - left_sum, squares[:, -1:] - left_sq
    left_mean, right_mean = left_sum / k, right_sum / (n - k)
    within = (left_sq - left_sum * left_mean) + (right_sq - right_sum * right_mean)
    pooled = np.maximum(within, 0.0) / (n - 2)
    scale = np.sqrt(pooled * (1.0 / k + 1.0 / (n - k)))
    difference = np.abs(right_mean - left_mean)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(scale > 0, difference / scale, np.where(difference > 0, np.inf, 0.0))
    return t.max(axis=1), t[0]


def _describe_step(
    data: FloatArray, start: int, index: int, stop: int, p_value: float, confidence: float
) -> ChangePoint:
    from cutaway.stats.distributions import t_ppf

    before, after = data[start:index], data[index:stop]
    size = float(after.mean() - before.mean())
    df = before.size + after.size - 2
    pooled = float(((before - before.mean()) ** 2).sum() + ((after - after.mean()) ** 2).sum()) / df
    half = t_ppf(0.5 + confidence / 2.0, df) * math.sqrt(
        pooled * (1.0 / before.size + 1.0 / after.size)
    )
    mean_before = float(before.mean())
    return ChangePoint(
        index=index,
        before=mean_before,
        after=float(after.mean()),
        size=size,
        relative=size / mean_before if mean_before != 0 else math.nan,
        ci_low=size - half,
        ci_high=size + half,
        p_value=p_value,
    )


def _pooled_sd(data: FloatArray, bounds: list[int]) -> float:
    pieces = [data[a:b] for a, b in itertools.pairwise(bounds) if b > a]
    df = sum(p.size - 1 for p in pieces)
    if df <= 0:
        return math.nan
    return math.sqrt(sum(float(((p - p.mean()) ** 2).sum()) for p in pieces) / df)
